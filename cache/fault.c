/* SPDX-License-Identifier: Apache-2.0 */
/* Faults inside the store's map and LMDB's assertions: the marker they leave (open/write/close of a path made at arming), then _exit. */
#include "config.h"

#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include <lmdb.h>

#include "cache/fault.h"

#define FAULT_HEAD_BYTES	64
#define FAULT_TEXT_BYTES	1024	/* a marker, or the line to stderr */
#define FAULT_MARKER_MODE	0660
#define FAULT_INODE_WORD	"data.mdb inode "

/*
 * What the handlers read: set before they are installed (path, head,
 * pid) or with lock-free atomics, which a signal handler may load.
 */
static struct {
	atomic_int			armed;
	pid_t				pid;
	char				path[PATH_MAX];
	char				head[FAULT_HEAD_BYTES];
	atomic_uintptr_t		lo, hi;
	struct code_range {
		uintptr_t		lo, hi;
	}				lmdb, libc;	/* executable segments */
	atomic_size_t			psize;
	_Atomic unsigned long long	ino;
} fault;

static _Thread_local const char	*fault_op;

/* A line built without stdio: only what a signal handler may call. */
struct text {
	char	b[FAULT_TEXT_BYTES];
	size_t	n;
};

static void
text_str(struct text *t, const char *s)
{
	while (s != NULL && *s != '\0' && t->n < sizeof(t->b) - 1)
		t->b[t->n++] = *s++;
	t->b[t->n] = '\0';
}

/* v in `base` (10 or 16), with 0x before hex. */
static void
text_base(struct text *t, unsigned long long v, unsigned base)
{
	char	d[24];
	size_t	i = sizeof(d);

	d[--i] = '\0';
	do {
		d[--i] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v > 0 && i > 0);
	if (base == 16)
		text_str(t, "0x");
	text_str(t, d + i);
}

static void
text_num(struct text *t, unsigned long long v)
{
	text_base(t, v, 10);
}

/* The marker, then the log line, then the exit: async-signal-safe. */
static void
fault_leave(const char *cause)
{
	struct text	m = { .n = 0 }, l = { .n = 0 };
	int		fd;

	text_str(&m, FAULT_INODE_WORD);
	text_num(&m, atomic_load_explicit(&fault.ino, memory_order_relaxed));
	text_str(&m, "\n");
	text_str(&m, cause);
	text_str(&m, "\n");
	if ((fd = open(fault.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    FAULT_MARKER_MODE)) != -1) {
		(void)!write(fd, m.b, m.n);
		(void)fsync(fd);
		(void)close(fd);
	}
	text_str(&l, fault.head);
	text_str(&l, "the store is damaged: ");
	text_str(&l, cause);
	text_str(&l, fd != -1 ? "; exiting for a restart, which moves it aside" :
	    "; exiting, and the marker could not be written: ");
	if (fd == -1)
		text_str(&l, fault.path);
	text_str(&l, "\n");
	(void)!write(STDERR_FILENO, l.b, l.n);
	_exit(CACHE_FAULT_EXIT);
}

static int
fault_mine(void)
{
	return atomic_load_explicit(&fault.armed, memory_order_acquire) &&
	    getpid() == fault.pid;
}

/* Where the interrupted instruction was, or 0 where this build cannot tell. */
static uintptr_t
fault_pc(const void *uctx)
{
	const ucontext_t	*uc = uctx;

#if defined(__x86_64__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__i386__)
	return (uintptr_t)uc->uc_mcontext.gregs[REG_EIP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/*
 * Where a leaf function interrupted at its first frame returns to: the
 * word at the top of the stack (x86), the link register (aarch64); 0
 * where this build cannot tell. The C library's memcpy, memmove, memset
 * and memcmp keep no frame of their own, so for them this is the caller.
 */
static uintptr_t
fault_leaf_return(const void *uctx)
{
	const ucontext_t	*uc = uctx;

#if defined(__x86_64__)
	return *(const uintptr_t *)uc->uc_mcontext.gregs[REG_RSP];
#elif defined(__i386__)
	return *(const uintptr_t *)uc->uc_mcontext.gregs[REG_ESP];
#elif defined(__aarch64__)
	return (uintptr_t)uc->uc_mcontext.regs[30];
#else
	(void)uc;
	return 0;
#endif
}

static int
in_range(const struct code_range *r, uintptr_t a)
{
	return a != 0 && a >= r->lo && a < r->hi;
}

/*
 * SIGBUS, SIGSEGV: the map's, or the default action (a bug: its core).
 * The map's: at an address inside the map, or anywhere from an
 * instruction of LMDB's, which dereferences only what the map and its
 * own structures hold (a damaged node's flags send it through a
 * sub-database cursor that a plain database does not have), or of a C
 * library function LMDB called (a damaged node's size sends its memcpy
 * past the map's end).
 */
static void
fault_on_signal(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t	a = (uintptr_t)si->si_addr, pc = fault_pc(uctx);
	uintptr_t	lo = atomic_load_explicit(&fault.lo, memory_order_relaxed);
	uintptr_t	hi = atomic_load_explicit(&fault.hi, memory_order_relaxed);
	size_t		ps = atomic_load_explicit(&fault.psize, memory_order_relaxed);
	struct text	t = { .n = 0 };
	int		in_map = a >= lo && a < hi && ps > 0;
	int		in_lmdb = in_range(&fault.lmdb, pc);
	int		by_lmdb = !in_lmdb && in_range(&fault.libc, pc) &&
			    in_range(&fault.lmdb, fault_leaf_return(uctx));

	/* si_code > 0: raised by the kernel for this access, not sent. */
	if (si->si_code > 0 && (in_map || in_lmdb || by_lmdb) && fault_mine()) {
		text_str(&t, sig == SIGBUS ? "SIGBUS" : "SIGSEGV");
		if (in_map) {
			text_str(&t, " reading page ");
			text_num(&t, (a - lo) / ps);
			text_str(&t, " of data.mdb (offset ");
			text_num(&t, a - lo);
			text_str(&t, ")");
		} else {
			text_str(&t, in_lmdb ? " inside LMDB" :
			    " in a C library call of LMDB's");
			text_str(&t, " at address ");
			text_base(&t, a, 16);
			text_str(&t, ", outside the map (a damaged page's "
			    "pointer or size)");
		}
		text_str(&t, " during ");
		text_str(&t, fault_op != NULL ? fault_op : "an unnamed read");
		fault_leave(t.b);
	}
	/* Returning re-runs the access, which now takes the default action. */
	signal(sig, SIG_DFL);
	if (si->si_code <= 0)
		raise(sig);
}

/* What fault_find_code looks for: the segment holding `want`. */
struct code_find {
	uintptr_t		 want;
	struct code_range	*into;
};

/* dl_iterate_phdr's callback: the executable segment of a shared object holding want. */
static int
fault_find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct code_find	*cf = arg;
	uintptr_t		 lo;
	ElfW(Half)		 i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		lo = info->dlpi_addr + ph->p_vaddr;
		if (cf->want < lo || cf->want >= lo + ph->p_memsz)
			continue;
		/* Linked into the program: its code is not told apart. */
		if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
			return 1;
		cf->into->lo = lo;
		cf->into->hi = lo + ph->p_memsz;
		return 1;
	}
	return 0;
}

int
cache_fault_arm(const char *dir, const char *head)
{
	struct sigaction	sa;

	if (snprintf(fault.path, sizeof(fault.path), "%s/%s", dir,
	    CACHE_FAULT_MARKER) >= (int)sizeof(fault.path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(fault.head, sizeof(fault.head), "%s", head != NULL ? head : "");
	fault.pid = getpid();
	if (fault.lmdb.hi == 0) {
		struct code_find	cf = { (uintptr_t)mdb_cursor_get, &fault.lmdb };

		(void)dl_iterate_phdr(fault_find_code, &cf);
		cf.want = (uintptr_t)memcpy;
		cf.into = &fault.libc;
		(void)dl_iterate_phdr(fault_find_code, &cf);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) == -1 ||
	    sigaction(SIGSEGV, &sa, NULL) == -1)
		return -1;
	atomic_store_explicit(&fault.armed, 1, memory_order_release);
	return 0;
}

void
cache_fault_exit(const char *cause)
{
	if (fault_mine())
		fault_leave(cause);
}

void
cache_fault_assert(const char *msg)
{
	struct text	t = { .n = 0 };

	text_str(&t, "an LMDB assertion during ");
	text_str(&t, fault_op != NULL ? fault_op : "an unnamed read");
	text_str(&t, " (");
	text_str(&t, msg);
	text_str(&t, ")");
	cache_fault_exit(t.b);
}

void
cache_fault_map(const void *addr, size_t len, size_t psize,
    unsigned long long ino)
{
	/* Shut first, so that no fault is judged by half an update. */
	atomic_store_explicit(&fault.hi, 0, memory_order_relaxed);
	if (addr == NULL)
		return;	/* the file stays named: a failed recovery's marker */
	atomic_store_explicit(&fault.lo, (uintptr_t)addr, memory_order_relaxed);
	atomic_store_explicit(&fault.psize, psize, memory_order_relaxed);
	atomic_store_explicit(&fault.ino, ino, memory_order_relaxed);
	atomic_store_explicit(&fault.hi, addr != NULL ? (uintptr_t)addr + len : 0,
	    memory_order_relaxed);
}

void
cache_fault_doing(const char *op)
{
	fault_op = op;
}

static int
fault_path(const char *dir, const char *name, char *path, size_t len)
{
	if (snprintf(path, len, "%s/%s", dir, name) >= (int)len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
cache_fault_marker(const char *dir, char *why, size_t whylen)
{
	char			 path[PATH_MAX], data[PATH_MAX];
	char			 buf[FAULT_TEXT_BYTES], *cause;
	unsigned long long	 ino;
	struct stat		 st;
	ssize_t			 n;
	int			 fd;

	if (fault_path(dir, CACHE_FAULT_MARKER, path, sizeof(path)) == -1 ||
	    fault_path(dir, "data.mdb", data, sizeof(data)) == -1) {
		snprintf(why, whylen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n == -1) {
		snprintf(why, whylen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	if (stat(data, &st) == -1) {
		if (errno != ENOENT) {
			snprintf(why, whylen, "%s: %s", data, strerror(errno));
			return -1;
		}
		(void)cache_fault_marker_clear(dir);
		return 0;
	}
	/* A marker cut short by the exit still means damage. */
	if (sscanf(buf, FAULT_INODE_WORD "%llu", &ino) != 1 ||
	    (cause = strchr(buf, '\n')) == NULL) {
		snprintf(why, whylen, "a fault in the map (%s does not say "
		    "more)", CACHE_FAULT_MARKER);
		return 1;
	}
	if ((unsigned long long)st.st_ino != ino) {
		(void)cache_fault_marker_clear(dir);
		return 0;
	}
	cause++;
	cause[strcspn(cause, "\n")] = '\0';
	snprintf(why, whylen, "the last run stopped at %s", cause);
	return 1;
}

int
cache_fault_marker_clear(const char *dir)
{
	char	path[PATH_MAX];

	if (fault_path(dir, CACHE_FAULT_MARKER, path, sizeof(path)) == -1)
		return -1;
	if (unlink(path) == -1 && errno != ENOENT)
		return -1;
	return 0;
}
