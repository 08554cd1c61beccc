/*
 * minikmd (nvdla-sim test fixture): the task descriptor, our own format.
 *
 * Address-list entry 0 of a task holds, little-endian:
 *   header   magic "MKMD", version 1, op count, then two words the firmware
 *            writes back: status (1 once every op completed) and ops done;
 *   per op   unit (MK_UNIT_*), register group (0/1), write count, then that
 *            many register writes.  A write whose addr_index is not -1 adds
 *            the bus address of that address-list entry (its low or high
 *            word, by addr_half) to the value: how a firmware points the
 *            hardware at task memory it only knows by index.
 * The firmware arms a unit by replaying the writes (the last ones being its
 * op-enable registers) and waits for that unit's done interrupt.
 */
#ifndef MINIKMD_TASK_H
#define MINIKMD_TASK_H

#include <stdint.h>

#define MK_MAGIC 0x444d4b4du /* "MKMD" read as a little-endian word */
#define MK_VERSION 1

enum mk_unit { MK_UNIT_NONE = 0, MK_UNIT_BDMA = 1, MK_UNIT_SDP = 2 };

/* ops that misbehave the way a buggy firmware fork does, for the bridge's tests */
enum mk_fault { MK_FAULT_CRASH = 0xf0, MK_FAULT_HANG = 0xf1, MK_FAULT_EXIT = 0xf2 };

struct mk_header {
	uint32_t magic;
	uint16_t version;
	uint16_t num_ops;
	uint32_t status;   /* written by the firmware */
	uint32_t ops_done; /* written by the firmware */
};

struct mk_op {
	uint8_t unit;
	uint8_t group;
	uint16_t num_writes;
};

struct mk_write {
	uint32_t reg; /* register byte address */
	uint32_t value;
	int16_t addr_index; /* -1: the value as it is */
	uint16_t addr_half; /* 0: add the address's low word, 1: its high word */
};

/* the bridge's configuration record: what the hardware has */
struct mk_config {
	uint32_t atom_size;
	_Bool bdma_enable;
	_Bool rubik_enable;
	_Bool weight_compress_support;
};

#endif
