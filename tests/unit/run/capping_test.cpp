// Adaptive capping's rules (run/runner.hpp Capping), without processes: a
// round's trials are capped at slack x its best time; a race's leader is
// never capped, and the others of its round not before its time is known,
// nor below it; a tune's confirmation rounds are never capped.
#include "run/runner.hpp"

#include <catch2/catch.hpp>

using namespace gpusweep::host;

TEST_CASE("capping: slack x the round's best, nothing before a best is known", "[cap]") {
  Capping c;
  c.slack = 1.5;
  CHECK(c.cap(0, 1) == 0);  // nobody reached yet
  c.note(0, 4.0);
  c.note(0, 6.0);  // not the best
  CHECK(c.cap(0, 1) == Approx(6.0));
  CHECK(c.cap(1, 1) == 0);  // another round
  c.uncapped_from = 0;
  CHECK(c.cap(0, 1) == 0);  // a confirmation round
}

TEST_CASE("capping: a round's leader is never capped, and the rest not before it", "[cap]") {
  Capping c;
  c.slack = 1.5;
  c.leader[3] = 7;  // config 7 leads round 3
  c.note(3, 2.0);   // another config reached first, in 2 s
  // The leader still training: nobody of its round is capped yet.
  CHECK(c.cap(3, 1) == 0);
  CHECK(c.cap(3, 7) == 0);
  // It reached in 5 s: the rest are capped at max(1.5 x 2, 5) = 5, it never.
  c.trained(3, 7, 5.0);
  CHECK(c.cap(3, 1) == Approx(5.0));
  CHECK(c.cap(3, 7) == 0);
  // A leader that ended without reaching (its budget): the usual cap.
  c.leader[4] = 7;
  c.note(4, 2.0);
  c.trained(4, 1, 2.0);  // not the leader: changes nothing
  CHECK(c.cap(4, 1) == 0);
  c.trained(4, 7, std::nullopt);
  CHECK(c.cap(4, 1) == Approx(3.0));
  // A round without a leader: the usual rule.
  c.note(5, 2.0);
  CHECK(c.cap(5, 1) == Approx(3.0));
}
