/*
 * nvdla-sim's port layer for NVIDIA's KMD firmware: the OS callbacks the
 * firmware calls (register access, task memory, logging, time), forwarded to
 * the simulator by the firmware's host process (host.c) through function
 * pointers it registers at start.
 *
 * Task data is our own struct: the task's address list as (memory base,
 * offset) pairs in simulated memory.  As in NVIDIA's Linux port, a
 * "processor" address is the list index itself (a handle); data reads and
 * writes through a handle address the start of that memory plus the offset
 * the firmware passes, and a "DMA" address is the memory base plus the
 * entry's offset.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "port.h"

#define SIM_DESTINATION_PROCESSOR 0
#define SIM_DESTINATION_DMA 1
#define SIM_EINVAL 22

static sim_reg_read_fn sim_reg_read;
static sim_reg_write_fn sim_reg_write;
static sim_mem_fn sim_mem;
static sim_log_fn sim_log;

void nvdla_sim_set_callbacks(sim_reg_read_fn rd, sim_reg_write_fn wr, sim_mem_fn mem,
			     sim_log_fn log)
{
	sim_reg_read = rd;
	sim_reg_write = wr;
	sim_mem = mem;
	sim_log = log;
}

uint32_t dla_reg_read(void *driver_context, uint32_t addr)
{
	(void)driver_context;
	return sim_reg_read(addr);
}

void dla_reg_write(void *driver_context, uint32_t addr, uint32_t reg)
{
	(void)driver_context;
	sim_reg_write(addr, reg);
}

static int valid_index(const struct sim_task *task, int64_t index)
{
	/* NVIDIA's port accepts index == num_addresses; we do not read past the list */
	return index >= 0 && (uint64_t)index < task->num_addresses;
}

int32_t dla_get_dma_address(void *driver_context, void *task_data, int16_t index,
			    void *dst_ptr, uint32_t destination)
{
	const struct sim_task *task = task_data;
	uint64_t *dst = dst_ptr;

	(void)driver_context;
	if (!valid_index(task, index))
		return -SIM_EINVAL;
	if (destination == SIM_DESTINATION_PROCESSOR)
		*dst = (uint64_t)index;
	else if (destination == SIM_DESTINATION_DMA)
		*dst = task->base[index] + task->offset[index];
	else
		return -SIM_EINVAL;
	return 0;
}

int32_t dla_data_read(void *driver_context, void *task_data, uint64_t src, void *dst,
		      uint32_t size, uint64_t offset)
{
	const struct sim_task *task = task_data;

	(void)driver_context;
	if (!valid_index(task, (int64_t)src))
		return -SIM_EINVAL;
	return sim_mem(task->base[src] + offset, dst, size, 0);
}

int32_t dla_data_write(void *driver_context, void *task_data, void *src, uint64_t dst,
		       uint32_t size, uint64_t offset)
{
	const struct sim_task *task = task_data;

	(void)driver_context;
	if (!valid_index(task, (int64_t)dst))
		return -SIM_EINVAL;
	return sim_mem(task->base[dst] + offset, src, size, 1);
}

void *dla_memset(void *src, int ch, uint64_t len)
{
	return memset(src, ch, len);
}

void *dla_memcpy(void *dest, const void *src, uint64_t len)
{
	return memcpy(dest, src, len);
}

int64_t dla_get_time_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sim_vlog(int32_t level, const char *fmt, va_list ap)
{
	char text[512];

	vsnprintf(text, sizeof(text), fmt, ap);
	if (sim_log)
		sim_log(level, text);
}

#define SIM_LOG_FN(name, level)                      \
	void name(const char *str, ...)              \
	{                                            \
		va_list ap;                          \
		va_start(ap, str);                   \
		sim_vlog(level, str, ap);            \
		va_end(ap);                          \
	}

SIM_LOG_FN(dla_debug, 0)
SIM_LOG_FN(dla_info, 1)
SIM_LOG_FN(dla_warn, 2)
SIM_LOG_FN(dla_error, 3)
