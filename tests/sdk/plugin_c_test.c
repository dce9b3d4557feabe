/* Compiles the plugin ABI header as C99 (it must stay plain C) and checks
 * that a C plugin can fill the table. Exit code 0 means success. */
#include <gpusweep/plugin.h>

#include <stdio.h>
#include <string.h>

static const char* manifest(void) { return "{\"name\":\"c\"}"; }

int main(void) {
  gpusweep_plugin table;
  gpusweep_step_result result;
  memset(&table, 0, sizeof table);
  memset(&result, 0, sizeof result);
  table.struct_size = (uint32_t)sizeof table;
  table.abi_major = GPUSWEEP_ABI_MAJOR;
  table.abi_minor = GPUSWEEP_ABI_MINOR;
  table.manifest = manifest;
  result.struct_size = (uint32_t)sizeof result;
  result.samples = 1.0;
  if (strcmp(table.manifest(), "{\"name\":\"c\"}") != 0) return 1;
  if (offsetof(gpusweep_plugin, manifest) != 4 * sizeof(uint32_t)) return 2;
  printf("plugin.h compiles as C; table is %u bytes\n", (unsigned)table.struct_size);
  return 0;
}
