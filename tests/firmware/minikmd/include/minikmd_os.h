/*
 * minikmd: a test fixture of nvdla-sim, not a real NVDLA firmware.
 *
 * The contract between a KMD-layout firmware and the OS port that hosts it,
 * as nvdla-sim's bridge (sim/firmware/port.c, sim/firmware/driver.py) sees
 * it: the entry points the bridge calls, and the callbacks the port provides.
 * Written for the tests from those interface facts alone.
 */
#ifndef MINIKMD_OS_H
#define MINIKMD_OS_H

#include <stdint.h>

/* destinations of dla_get_dma_address: a handle for dla_data_read/write, or a bus address */
#define MK_DESTINATION_PROCESSOR 0
#define MK_DESTINATION_DMA 1

/* callbacks the port provides */
uint32_t dla_reg_read(void *driver_context, uint32_t addr);
void dla_reg_write(void *driver_context, uint32_t addr, uint32_t value);
int32_t dla_get_dma_address(void *driver_context, void *task_data, int16_t index,
			    void *dst, uint32_t destination);
int32_t dla_data_read(void *driver_context, void *task_data, uint64_t src, void *dst,
		      uint32_t size, uint64_t offset);
int32_t dla_data_write(void *driver_context, void *task_data, void *src, uint64_t dst,
		       uint32_t size, uint64_t offset);
void dla_debug(const char *fmt, ...);
void dla_info(const char *fmt, ...);
void dla_warn(const char *fmt, ...);
void dla_error(const char *fmt, ...);

/* entry points the bridge calls */
int32_t dla_register_driver(void **engine_context, void *driver_context);
int32_t dla_execute_task(void *engine_context, void *task_data, void *config_data);
int32_t dla_isr_handler(void *engine_context);
int32_t dla_process_events(void *engine_context, uint32_t *task_complete);
void dla_clear_task(void *engine_context);

#endif
