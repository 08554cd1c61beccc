/* Stand-in for the kernel's <linux/types.h> when the firmware builds in user space. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
