/*
 * The firmware's own process: runs the KMD's entry points and relays its OS
 * calls (port.c) to the simulator over two pipes.
 *
 * Started by sim/firmware/driver.py as "firmware FD_IN FD_OUT".  It knows
 * nothing of the simulator, so a firmware that crashes, exits or spins takes
 * down only this process, and the simulator reports it.  Frames: a kind byte,
 * the payload's length as a little-endian u32, the payload (integers
 * little-endian):
 *
 *   simulator -> firmware: 'S' a snapshot of status registers, entries of
 *     six u32: address, value, the bits a write of the register stores
 *     (writable), the bits a write of 1 clears (w1c), the address of the one
 *     other register whose write changes it (dep; ANY_WRITE: every write
 *     does), whether its own write stores by those masks (else it forgets the
 *     entry).  The simulator's registers change only by writes, as these rules
 *     say, or between calls;
 *     'T' before a call: the memory segments held (see 'm') that memory
 *     written since cuts short, (u32 index, u32 bytes still valid) pairs;
 *     'C' a call: the entry point's name, a NUL, its arguments;
 *     'R' the answer to a request the firmware waits on.
 *   firmware -> simulator: 'W' register write (u32 address, u32 value),
 *     'c' a register read answered from the snapshot (address, value),
 *     'M' memory write (u64 address, bytes), 'L' log line (i32 level, text),
 *     'G' consecutive debug and info lines (levels 0 and 1) as 'L' frames:
 *     posted, buffered in order; 'r' register read (u32 address; answer: u32
 *     value, then a new snapshot), 'm' memory read (u64 address, u32 size;
 *     answer: i32 status, the bytes, and the bytes after them, which the
 *     firmware keeps as a segment for later reads, in this call and the next:
 *     memory changes only by its own writes, applied here too, or between
 *     calls, which 'T' reports; a full table of segments is forgotten at
 *     once): each flushes the buffer and waits for 'R'; 'X' the call's
 *     return values (i32 return, u32 task complete).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "port.h"

/* the KMD's entry points (NVIDIA's nvdla_interface.h declares them) */
int32_t dla_register_driver(void **engine_context, void *driver_context);
int32_t dla_execute_task(void *engine_context, void *task_data, void *config_data);
int32_t dla_isr_handler(void *engine_context);
int32_t dla_process_events(void *engine_context, uint32_t *task_complete);
void dla_clear_task(void *engine_context);

#define FLUSH_AT (1u << 16) /* bytes of buffered frames sent at once */
#define MAX_SNAPSHOT 256
#define MAX_SEGMENTS 64
#define SNAPSHOT_ENTRY 24  /* bytes of a snapshot entry: six u32 */
#define ANY_WRITE 0xFFFFFFFFu /* dep: every register write forgets the entry */

struct buffer {
	unsigned char *data;
	size_t len, cap;
};

struct segment {
	uint64_t addr;
	uint32_t len;
	unsigned char *data;
};

/* a register's value and what a write does to it (see 'S') */
struct snap_entry {
	uint32_t addr, value, writable, w1c, dep, own_write_stores;
};

static int fd_in, fd_out;
static struct buffer pending;  /* posted frames not sent yet */
static size_t log_batch = (size_t)-1; /* where in pending the last frame starts, if a 'G' */
static struct buffer incoming; /* the payload of the last frame received */
static struct snap_entry snap[MAX_SNAPSHOT];
static unsigned snap_count;
static struct segment segments[MAX_SEGMENTS];
static unsigned segment_count;

static void fail(const char *what)
{
	fprintf(stderr, "firmware process: %s\n", what);
	exit(1);
}

static void reserve(struct buffer *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	b->data = realloc(b->data, cap);
	if (!b->data)
		fail("out of memory");
	b->cap = cap;
}

static void put(const void *data, size_t size)
{
	reserve(&pending, size);
	memcpy(pending.data + pending.len, data, size);
	pending.len += size;
}

static void put_u32(uint32_t v)
{
	unsigned char b[4] = {v, v >> 8, v >> 16, v >> 24};
	put(b, 4);
}

static void put_u64(uint64_t v)
{
	put_u32((uint32_t)v);
	put_u32((uint32_t)(v >> 32));
}

static uint32_t get_u32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const unsigned char *p)
{
	return get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

static void flush(void)
{
	size_t done = 0;
	while (done < pending.len) {
		ssize_t n = write(fd_out, pending.data + done, pending.len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			exit(0); /* the simulator went away */
		done += (size_t)n;
	}
	pending.len = 0;
	log_batch = (size_t)-1;
}

/* start a frame; its payload follows with put() */
static void begin(char kind, uint32_t size)
{
	log_batch = (size_t)-1;
	put(&kind, 1);
	put_u32(size);
}

static void posted(void)
{
	if (pending.len >= FLUSH_AT)
		flush();
}

static void read_exact(unsigned char *dst, size_t size)
{
	size_t done = 0;
	while (done < size) {
		ssize_t n = read(fd_in, dst + done, size - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			exit(0); /* the simulator went away */
		done += (size_t)n;
	}
}

/* the next frame: its kind; its payload in incoming */
static char receive(void)
{
	unsigned char header[5];
	read_exact(header, 5);
	uint32_t size = get_u32(header + 1);
	incoming.len = 0;
	reserve(&incoming, (size_t)size + 1);
	read_exact(incoming.data, size);
	incoming.data[size] = 0;
	incoming.len = size;
	return (char)header[0];
}

/* send the buffered frames, then wait for the answer to the last */
static void await_answer(void)
{
	flush();
	if (receive() != 'R')
		fail("expected an answer");
}

static void take_snapshot(const unsigned char *data, size_t size)
{
	snap_count = 0;
	for (size_t at = 0; at + SNAPSHOT_ENTRY <= size && snap_count < MAX_SNAPSHOT;
	     at += SNAPSHOT_ENTRY) {
		struct snap_entry *e = &snap[snap_count++];
		e->addr = get_u32(data + at);
		e->value = get_u32(data + at + 4);
		e->writable = get_u32(data + at + 8);
		e->w1c = get_u32(data + at + 12);
		e->dep = get_u32(data + at + 16);
		e->own_write_stores = get_u32(data + at + 20);
	}
}

/* a register write: the entries it changes take the written bits, those it may change
 * otherwise are forgotten */
static void snapshot_write(uint32_t addr, uint32_t value)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < snap_count; i++) {
		struct snap_entry e = snap[i];
		if (e.addr == addr) {
			if (!e.own_write_stores)
				continue;
			e.value = (e.value & ~e.writable & ~e.w1c) | (value & e.writable) |
				  (e.value & e.w1c & ~value);
		} else if (e.dep == addr || e.dep == ANY_WRITE) {
			continue;
		}
		snap[kept++] = e;
	}
	snap_count = kept;
}

static void forget_segments(void)
{
	for (unsigned i = 0; i < segment_count; i++)
		free(segments[i].data);
	segment_count = 0;
}

/* 'T': memory written since the simulator sent these segments cuts them short */
static void cut_segments(const unsigned char *data, size_t size)
{
	for (size_t at = 0; at + 8 <= size; at += 8) {
		uint32_t index = get_u32(data + at), len = get_u32(data + at + 4);
		if (index >= segment_count)
			fail("cut of a segment not held");
		if (len < segments[index].len)
			segments[index].len = len;
	}
}

static uint32_t host_reg_read(uint32_t addr)
{
	for (unsigned i = 0; i < snap_count; i++) {
		if (snap[i].addr == addr) { /* the simulator still hears of it, in order */
			begin('c', 8);
			put_u32(addr);
			put_u32(snap[i].value);
			posted();
			return snap[i].value;
		}
	}
	begin('r', 4);
	put_u32(addr);
	await_answer();
	if (incoming.len < 4)
		fail("short register read answer");
	take_snapshot(incoming.data + 4, incoming.len - 4);
	return get_u32(incoming.data);
}

static void host_reg_write(uint32_t addr, uint32_t value)
{
	snapshot_write(addr, value);
	begin('W', 8);
	put_u32(addr);
	put_u32(value);
	posted();
}

static int32_t mem_read(uint64_t addr, void *buf, uint32_t size)
{
	for (unsigned i = 0; i < segment_count; i++) {
		struct segment *s = &segments[i];
		if (s->addr <= addr && addr - s->addr <= s->len && size <= s->len - (addr - s->addr)) {
			memcpy(buf, s->data + (addr - s->addr), size);
			return 0;
		}
	}
	begin('m', 12);
	put_u64(addr);
	put_u32(size);
	await_answer();
	if (incoming.len < 4)
		fail("short memory read answer");
	int32_t status = (int32_t)get_u32(incoming.data);
	if (status)
		return status;
	if (incoming.len - 4 < size)
		fail("short memory read answer");
	memcpy(buf, incoming.data + 4, size);
	if (segment_count == MAX_SEGMENTS) /* the simulator forgets them too */
		forget_segments();
	struct segment *s = &segments[segment_count];
	s->len = (uint32_t)(incoming.len - 4);
	s->data = malloc(s->len ? s->len : 1);
	if (!s->data)
		fail("out of memory");
	memcpy(s->data, incoming.data + 4, s->len);
	s->addr = addr;
	segment_count++;
	return 0;
}

static void mem_write(uint64_t addr, const void *buf, uint32_t size)
{
	begin('M', 8 + size);
	put_u64(addr);
	put(buf, size);
	posted();
	for (unsigned i = 0; i < segment_count; i++) { /* what it holds stays what memory has */
		struct segment *s = &segments[i];
		uint64_t lo = addr > s->addr ? addr : s->addr;
		uint64_t end = addr + size, s_end = s->addr + s->len;
		uint64_t hi = end < s_end ? end : s_end;
		if (lo < hi)
			memcpy(s->data + (lo - s->addr), (const unsigned char *)buf + (lo - addr),
			       hi - lo);
	}
}

static int32_t host_mem(uint64_t addr, void *buf, uint32_t size, int32_t write)
{
	if (write) {
		mem_write(addr, buf, size);
		return 0;
	}
	return mem_read(addr, buf, size);
}

/* A log line.  The KMD logs thousands (a line or two per event): its debug and info
 * lines go, one after another, into one 'G' frame, which the simulator keeps whole
 * unless a logger listens (frame by frame they cost it more than the register writes
 * around them). */
static void host_log(int32_t level, const char *text)
{
	size_t size = text ? strlen(text) : 0;
	if (level == 0 || level == 1) {
		size_t batch = log_batch;
		if (batch == (size_t)-1) {
			begin('G', 0);
			batch = pending.len - 5;
		}
		put("L", 1);
		put_u32(4 + (uint32_t)size);
		put_u32((uint32_t)level);
		put(text, size);
		size_t payload = pending.len - batch - 5;
		unsigned char *len = pending.data + batch + 1;
		len[0] = payload, len[1] = payload >> 8, len[2] = payload >> 16, len[3] = payload >> 24;
		log_batch = batch;
	} else {
		begin('L', 4 + (uint32_t)size);
		put_u32((uint32_t)level);
		put(text, size);
	}
	posted();
}

int main(int argc, char **argv)
{
	void *engine = NULL;
	uint64_t *bases = NULL, *offsets = NULL; /* the running task's list, kept until the next */
	struct sim_task task = {0};
	struct sim_config config = {0};

	if (argc != 3)
		fail("usage: firmware FD_IN FD_OUT");
	fd_in = atoi(argv[1]);
	fd_out = atoi(argv[2]);
	nvdla_sim_set_callbacks(host_reg_read, host_reg_write, host_mem, host_log);
	for (;;) {
		char kind = receive();
		if (kind == 'S') { /* the status words the call will likely read first */
			take_snapshot(incoming.data, incoming.len);
			continue;
		}
		if (kind == 'T') {
			cut_segments(incoming.data, incoming.len);
			continue;
		}
		if (kind != 'C')
			fail("expected a call");
		const char *name = (const char *)incoming.data;
		size_t name_len = strlen(name);
		const unsigned char *args = incoming.data + name_len + 1;
		size_t args_len = name_len < incoming.len ? incoming.len - name_len - 1 : 0;
		int32_t ret = 0;
		uint32_t complete = 0;
		if (!strcmp(name, "dla_register_driver")) {
			ret = dla_register_driver(&engine, NULL);
		} else if (!strcmp(name, "dla_execute_task")) {
			if (args_len < 11)
				fail("short task");
			uint32_t n = get_u32(args);
			if (args_len < 11 + 16 * (size_t)n)
				fail("short task");
			free(bases);
			free(offsets);
			bases = calloc(n ? n : 1, sizeof(*bases));
			offsets = calloc(n ? n : 1, sizeof(*offsets));
			if (!bases || !offsets)
				fail("out of memory");
			for (uint32_t i = 0; i < n; i++) {
				bases[i] = get_u64(args + 11 + 16 * i);
				offsets[i] = get_u64(args + 11 + 16 * i + 8);
			}
			task.num_addresses = n;
			task.base = bases;
			task.offset = offsets;
			config.atom_size = get_u32(args + 4);
			config.bdma_enable = args[8];
			config.rubik_enable = args[9];
			config.weight_compress_support = args[10];
			ret = dla_execute_task(engine, &task, &config);
		} else if (!strcmp(name, "interrupt")) { /* the driver's handler, then its events */
			dla_isr_handler(engine);
			ret = dla_process_events(engine, &complete);
		} else if (!strcmp(name, "dla_clear_task")) {
			dla_clear_task(engine);
		} else {
			fail("unknown call");
		}
		snap_count = 0;
		begin('X', 8);
		put_u32((uint32_t)ret);
		put_u32(complete);
		flush();
	}
}
