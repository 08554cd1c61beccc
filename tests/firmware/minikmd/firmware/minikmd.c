/*
 * minikmd: nvdla-sim's own miniature firmware, a test fixture only.
 *
 * It exercises the bridge the way a real KMD does, in a few lines: read a
 * task descriptor (minikmd_task.h) from task memory, program each operation
 * through dla_reg_write, and advance from one operation to the next only when
 * the interrupt handler has seen that unit's done bit.  Every failure is
 * reported the way a KMD reports it: a dla_error line and a negative code.
 */
#include <stddef.h>
#include <stdlib.h>

#include "minikmd_os.h"
#include "minikmd_task.h"

#define MK_EINVAL 22
#define MK_ENODEV 19
#define MK_EIO 5

/* GLB.S_INTR_STATUS: its unit base differs between the two register maps */
#ifdef DLA_2_CONFIG
#define MK_GLB_INTR_STATUS 0x100cu
#else
#define MK_GLB_INTR_STATUS 0x000cu
#endif

/* done bit of group 0 in S_INTR_STATUS; group 1 is the next bit */
#define MK_SDP_DONE_BIT 0
#define MK_BDMA_DONE_BIT 6

struct mk_engine {
	void *driver_context;
	void *task_data;
	uint64_t handle;     /* address-list entry 0 as dla_data_read knows it */
	uint64_t next_op;    /* byte offset of the next op in the descriptor */
	uint16_t num_ops;
	uint16_t ops_done;
	uint32_t awaited;    /* done bit of the op in flight */
	uint32_t seen;       /* done bits the interrupt handler collected */
	uint32_t uncleared;  /* done bits that read back set after the handler cleared them */
	_Bool bdma_enable;
};

static struct mk_engine engine;

int32_t dla_register_driver(void **engine_context, void *driver_context)
{
	engine.driver_context = driver_context;
	*engine_context = &engine;
	return 0;
}

static int32_t mk_read(struct mk_engine *e, void *dst, uint32_t size, uint64_t offset)
{
	return dla_data_read(e->driver_context, e->task_data, e->handle, dst, size, offset);
}

/* Write the status back, reading it before and after: a port that keeps what the
 * firmware read must show the firmware its own write. */
static int32_t mk_write_back(struct mk_engine *e, uint32_t status)
{
	uint32_t words[2] = { status, e->ops_done };
	uint32_t back[2];
	uint64_t at = offsetof(struct mk_header, status);
	int32_t ret;

	ret = mk_read(e, back, sizeof(back), at);
	if (!ret)
		ret = dla_data_write(e->driver_context, e->task_data, words, e->handle,
				     sizeof(words), at);
	if (!ret)
		ret = mk_read(e, back, sizeof(back), at);
	if (ret)
		return ret;
	if (back[0] != words[0] || back[1] != words[1]) {
		dla_error("minikmd: status written back reads %u, %u\n", back[0], back[1]);
		return -MK_EIO;
	}
	return 0;
}

static int32_t mk_done_bit(struct mk_engine *e, const struct mk_op *op, uint16_t index)
{
	if (op->group > 1) {
		dla_error("minikmd: op %u: register group %u does not exist\n", index, op->group);
		return -MK_EINVAL;
	}
	switch (op->unit) {
	case MK_UNIT_SDP:
		return MK_SDP_DONE_BIT + op->group;
	case MK_UNIT_BDMA:
		if (!e->bdma_enable) {
			dla_error("minikmd: op %u: this NVDLA has no BDMA\n", index);
			return -MK_ENODEV;
		}
		return MK_BDMA_DONE_BIT + op->group;
	default: /* cites its source as a real KMD's assertions do */
		dla_error("minikmd: op %u: unknown unit %u (%s:%d)\n", index, op->unit, __FILE__,
			  __LINE__);
		return -MK_EINVAL;
	}
}

/* The faults a firmware under development has: a bad pointer, a loop, an exit. */
static void mk_misbehave(uint8_t unit)
{
	volatile uint32_t *nowhere = NULL;
	volatile uint32_t spin = 0;

	switch (unit) {
	case MK_FAULT_CRASH:
		*nowhere = 1;
		break;
	case MK_FAULT_HANG:
		for (;;)
			spin++;
	case MK_FAULT_EXIT:
		exit(3);
	}
}

/* Program the next op: its register writes, addresses resolved from the address list. */
static int32_t mk_start_next(struct mk_engine *e)
{
	struct mk_op op;
	struct mk_write w;
	int32_t bit, ret;
	uint16_t i;

	ret = mk_read(e, &op, sizeof(op), e->next_op);
	if (ret)
		return ret;
	mk_misbehave(op.unit);
	if (op.unit == MK_UNIT_NONE) {
		/* a firmware that logs a rejected op but neither fails nor arms anything */
		dla_error("minikmd: op %u: unit 0 programs nothing\n", e->ops_done);
		e->awaited = 0;
		return 0;
	}
	bit = mk_done_bit(e, &op, e->ops_done);
	if (bit < 0)
		return bit;
	dla_info("minikmd: op %u: unit %u, %u register writes\n", e->ops_done, op.unit,
		 op.num_writes);
	e->next_op += sizeof(op);
	for (i = 0; i < op.num_writes; i++, e->next_op += sizeof(w)) {
		ret = mk_read(e, &w, sizeof(w), e->next_op);
		if (ret)
			return ret;
		if (w.addr_index != -1) {
			uint64_t bus;

			ret = dla_get_dma_address(e->driver_context, e->task_data, w.addr_index,
						  &bus, MK_DESTINATION_DMA);
			if (ret) {
				dla_error("minikmd: op %u: no address-list entry %d\n",
					  e->ops_done, w.addr_index);
				return ret;
			}
			w.value += (uint32_t)(w.addr_half ? bus >> 32 : bus);
		}
		dla_reg_write(e->driver_context, w.reg, w.value);
	}
	e->awaited = 1u << bit;
	return 0;
}

int32_t dla_execute_task(void *engine_context, void *task_data, void *config_data)
{
	struct mk_engine *e = engine_context;
	const struct mk_config *config = config_data;
	struct mk_header header;
	int32_t ret;

	e->task_data = task_data;
	e->bdma_enable = config->bdma_enable;
	ret = dla_get_dma_address(e->driver_context, task_data, 0, &e->handle,
				  MK_DESTINATION_PROCESSOR);
	if (ret)
		return ret;
	ret = mk_read(e, &header, sizeof(header), 0);
	if (ret)
		return ret;
	if (header.magic != MK_MAGIC || header.version != MK_VERSION || !header.num_ops) {
		dla_error("minikmd: not a minikmd task (magic %#x, version %u, %u ops)\n",
			  header.magic, header.version, header.num_ops);
		return -MK_EINVAL;
	}
	dla_debug("minikmd: task of %u ops, atom %u bytes\n", header.num_ops, config->atom_size);
	e->num_ops = header.num_ops;
	e->ops_done = 0;
	e->seen = e->uncleared = 0;
	e->next_op = sizeof(header);
	return mk_start_next(e);
}

int32_t dla_isr_handler(void *engine_context)
{
	struct mk_engine *e = engine_context;
	uint32_t status = dla_reg_read(e->driver_context, MK_GLB_INTR_STATUS);

	dla_reg_write(e->driver_context, MK_GLB_INTR_STATUS, status); /* write 1 to clear */
	e->seen |= status;
	/* read again, as NVIDIA's handler does: a port that keeps what the firmware read
	 * must forget it at a register write */
	e->uncleared |= dla_reg_read(e->driver_context, MK_GLB_INTR_STATUS) & status;
	return 0;
}

int32_t dla_process_events(void *engine_context, uint32_t *task_complete)
{
	struct mk_engine *e = engine_context;
	int32_t ret;

	if (e->uncleared) {
		dla_error("minikmd: done bits %#x still set after clearing\n", e->uncleared);
		return -MK_EIO;
	}
	if (!(e->seen & e->awaited))
		return 0; /* another unit's interrupt: keep waiting */
	e->seen &= ~e->awaited;
	e->ops_done++;
	if (e->ops_done == e->num_ops) {
		*task_complete = 1;
		return mk_write_back(e, 1);
	}
	ret = mk_write_back(e, 0);
	return ret ? ret : mk_start_next(e);
}

void dla_clear_task(void *engine_context)
{
	struct mk_engine *e = engine_context;

	e->task_data = NULL;
	e->num_ops = e->ops_done = 0;
	e->awaited = e->seen = e->uncleared = 0;
}
