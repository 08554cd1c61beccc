/*
 * What the port layer (port.c) and the firmware's host process (host.c)
 * share: the task data handed to the firmware and the callbacks through which
 * the firmware reaches the simulator.
 */
#ifndef NVDLA_SIM_PORT_H
#define NVDLA_SIM_PORT_H
#include <stdbool.h>
#include <stdint.h>

struct sim_task {
	uint32_t num_addresses;
	const uint64_t *base;   /* memory base of each address-list entry */
	const uint64_t *offset; /* the entry's offset within that memory */
};

/* the firmware's configuration record: atom size and the optional units */
struct sim_config {
	uint32_t atom_size;
	bool bdma_enable;
	bool rubik_enable;
	bool weight_compress_support;
};

typedef uint32_t (*sim_reg_read_fn)(uint32_t addr);
typedef void (*sim_reg_write_fn)(uint32_t addr, uint32_t value);
/* copy size bytes between host buffer and simulated memory; write != 0: to memory */
typedef int32_t (*sim_mem_fn)(uint64_t addr, void *buf, uint32_t size, int32_t write);
typedef void (*sim_log_fn)(int32_t level, const char *text);

void nvdla_sim_set_callbacks(sim_reg_read_fn rd, sim_reg_write_fn wr, sim_mem_fn mem,
			     sim_log_fn log);

#endif
