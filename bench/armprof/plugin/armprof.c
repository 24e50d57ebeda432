/*
 * armprof: a QEMU TCG plugin that counts the guest instructions executed in every translation
 * block, so that a script can attribute them to the functions of the guest binary
 * (bench/armprof.sh does that with `go tool nm`).
 *
 * Like ../shared/tools/armcount's icount.c it declares the few plugin-API functions it uses
 * itself (QEMU 7.2, plugin API version 1), so no QEMU headers are needed. At exit it writes one
 * line per translated block, "armprof VADDR NINSNS EXECUTIONS" (hexadecimal address), to the
 * file named by the plugin argument out=PATH (default: QEMU's plugin log, stderr). A block
 * translated more than once appears once per translation; the script adds them up. Counts are
 * exact for a single-threaded guest (run Go with GOMAXPROCS=1).
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_info_t;
struct qemu_plugin_tb;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 = 0 };

extern size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
extern uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
extern void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                                     void *ptr, uint64_t imm);
extern void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
                                                  void (*cb)(qemu_plugin_id_t, struct qemu_plugin_tb *));
extern void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, void (*cb)(qemu_plugin_id_t, void *),
                                           void *userdata);
extern void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

struct block {
    uint64_t execs; /* first: the inline counter adds to it */
    uint64_t vaddr;
    uint64_t n;
    struct block *next;
};

static struct block *blocks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char outpath[4096];

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    struct block *b = calloc(1, sizeof *b);
    (void)id;
    if (b == NULL)
        return;
    b->vaddr = qemu_plugin_tb_vaddr(tb);
    b->n = qemu_plugin_tb_n_insns(tb);
    pthread_mutex_lock(&lock);
    b->next = blocks;
    blocks = b;
    pthread_mutex_unlock(&lock);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->execs, 1);
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    FILE *f = NULL;
    char buf[128];
    (void)id; (void)p;
    if (outpath[0] != 0)
        f = fopen(outpath, "w");
    pthread_mutex_lock(&lock);
    for (struct block *b = blocks; b != NULL; b = b->next) {
        if (b->execs == 0)
            continue;
        snprintf(buf, sizeof buf, "armprof %" PRIx64 " %" PRIu64 " %" PRIu64 "\n", b->vaddr, b->n, b->execs);
        if (f != NULL)
            fputs(buf, f);
        else
            qemu_plugin_outs(buf);
    }
    pthread_mutex_unlock(&lock);
    if (f != NULL)
        fclose(f);
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                               const struct qemu_info_t *info,
                                                               int argc, char **argv)
{
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "out=", 4) == 0) {
            strncpy(outpath, argv[i] + 4, sizeof outpath - 1);
        }
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
