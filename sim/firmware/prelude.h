/* Included before every firmware source: what the kernel headers would give. */
#ifndef NVDLA_SIM_PRELUDE_H
#define NVDLA_SIM_PRELUDE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#ifndef __aligned
#define __aligned(x) __attribute__((aligned(x)))
#endif
#ifndef __packed
#define __packed __attribute__((packed))
#endif
#endif
