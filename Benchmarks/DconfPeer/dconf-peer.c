/* The benchmark's dconf peer: dconf measured through its own C client library, in C, in a process
 * of its own that the benchmark starts inside a private `dbus-run-session`.
 *
 * The benchmark compiles this file with the system C compiler when `pkg-config dconf` works, so
 * that LiveDefaults, its tests and the benchmark itself build without libdconf-dev. Measuring in C
 * gives dconf no Swift call overhead that it would not have in a C or GLib program.
 *
 * Protocol: one command a line on standard input, one answer a line on standard output.
 *   populate N         replace /bench/ with N keys (one change), wait until it is written; answers N
 *   read-bool N        nanoseconds per dconf_client_read of a boolean (and g_variant_get_boolean)
 *   read-string N      the same for a string
 *   write-fast N       nanoseconds per dconf_client_write_fast of an integer
 *   write-sync         nanoseconds of one dconf_client_write_sync of an integer
 *   external N MS      another process writes /bench/stamp N times, MS ms apart after each
 *                      callback; answers "count" and then each latency in nanoseconds, sorted
 *   quit               stop the dconf-service this session activated (by its PID) and exit
 *   (and, as the other process: `dconf-peer writer N MS`)
 */
#include <dconf.h>
#include <gio/gio.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static uint64_t peer_now(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (uint64_t)time.tv_sec * 1000000000u + (uint64_t)time.tv_nsec;
}

static DConfClient *peer_client;
static volatile int peer_sink;

/* The same mix of value types as the benchmark's suites (string, integer, boolean, real, array). */
static GVariant *peer_sample_value(int index) {
    char text[64];
    switch (index % 5) {
    case 0:
        snprintf(text, sizeof text, "value number %d", index);
        return g_variant_new_string(text);
    case 1: return g_variant_new_int64(index);
    case 2: return g_variant_new_boolean(index % 2 == 0);
    case 3: return g_variant_new_double(index / 3.0);
    default:
        snprintf(text, sizeof text, "item %d", index);
        return g_variant_new("(sx)", text, (gint64)index);
    }
}

static void peer_populate(int count) {
    DConfChangeset *changes = dconf_changeset_new();
    dconf_changeset_set(changes, "/bench/", NULL); /* reset the directory first */
    char key[64];
    for (int index = 0; index < count; index++) {
        snprintf(key, sizeof key, "/bench/key-%d", index);
        dconf_changeset_set(changes, key, peer_sample_value(index));
    }
    dconf_changeset_set(changes, "/bench/flag", g_variant_new_boolean(TRUE));
    dconf_changeset_set(changes, "/bench/name", g_variant_new_string("hello"));
    GError *error = NULL;
    if (!dconf_client_change_sync(peer_client, changes, NULL, NULL, &error)) {
        fprintf(stderr, "dconf-peer: populate: %s\n", error->message);
        exit(1);
    }
    dconf_changeset_unref(changes);
    printf("%d\n", count);
}

/* Nanoseconds per call over `count` calls after a warm-up, the best of three rounds (as the
 * benchmark measures LiveDefaults and Foundation). */
#define PEER_BEST_OF_THREE(count, body)                                                           \
    do {                                                                                          \
        for (int warm = 0; warm < ((count) < 1000 ? (count) : 1000); warm++) { body; }            \
        double best = 1e300;                                                                      \
        for (int round = 0; round < 3; round++) {                                                 \
            uint64_t start = peer_now();                                                          \
            for (int call = 0; call < (count); call++) { body; }                                  \
            double each = (double)(peer_now() - start) / (count);                                 \
            if (each < best) best = each;                                                         \
        }                                                                                         \
        printf("%.1f\n", best);                                                                   \
    } while (0)

static void peer_read_bool(int count) {
    PEER_BEST_OF_THREE(count, {
        GVariant *value = dconf_client_read(peer_client, "/bench/flag");
        peer_sink += value != NULL && g_variant_get_boolean(value);
        if (value != NULL) g_variant_unref(value);
    });
}

static void peer_read_string(int count) {
    PEER_BEST_OF_THREE(count, {
        GVariant *value = dconf_client_read(peer_client, "/bench/name");
        peer_sink += value != NULL && g_variant_get_string(value, NULL)[0] == 'h';
        if (value != NULL) g_variant_unref(value);
    });
}

static gint64 peer_counter;

static void peer_write_fast(int count) {
    PEER_BEST_OF_THREE(count, {
        if (!dconf_client_write_fast(peer_client, "/bench/counter", g_variant_new_int64(++peer_counter), NULL))
            exit(1);
    });
    dconf_client_sync(peer_client); /* let the queued writes land before the next measurement */
}

static void peer_write_sync(void) {
    GError *error = NULL;
    uint64_t start = peer_now();
    gboolean written =
        dconf_client_write_sync(peer_client, "/bench/key-0", g_variant_new_int64(++peer_counter), NULL, NULL, &error);
    uint64_t elapsed = peer_now() - start;
    if (!written) {
        fprintf(stderr, "dconf-peer: write_sync: %s\n", error->message);
        exit(1);
    }
    printf("%llu\n", (unsigned long long)elapsed);
}

/* The other process of `external`: writes the monotonic time into /bench/stamp, then waits for a
 * byte on standard input (the watcher saw it) and `spacing` milliseconds before the next write. */
static int peer_writer(int count, int spacing) {
    DConfClient *client = dconf_client_new();
    char go;
    for (int index = 0; index < count; index++) {
        if (!dconf_client_write_fast(client, "/bench/stamp", g_variant_new_int64((gint64)peer_now()), NULL)) return 1;
        if (read(STDIN_FILENO, &go, 1) != 1) break;
        if (spacing > 0) usleep((useconds_t)spacing * 1000); /* pacing the changes, not synchronisation */
    }
    dconf_client_sync(client);
    g_object_unref(client);
    return 0;
}

struct peer_watch {
    DConfClient *client;
    uint64_t *latencies;
    int received;
    int to_writer;
};

static void peer_changed(DConfClient *client, const gchar *prefix, const gchar *const *changes, const gchar *tag,
                         gpointer data) {
    (void)tag;
    struct peer_watch *watch = data;
    uint64_t now = peer_now();
    int stamped = 0;
    for (int index = 0; changes[index] != NULL; index++) {
        char *path = g_strconcat(prefix, changes[index], NULL);
        stamped |= strcmp(path, "/bench/stamp") == 0;
        g_free(path);
    }
    if (!stamped) return;
    GVariant *value = dconf_client_read(client, "/bench/stamp");
    if (value == NULL) return;
    watch->latencies[watch->received++] = now - (uint64_t)g_variant_get_int64(value);
    g_variant_unref(value);
    if (write(watch->to_writer, "\n", 1) != 1) return; /* the next change may go */
}

static gboolean peer_deadline(gpointer data) {
    *(int *)data = 1;
    return G_SOURCE_REMOVE;
}

static int peer_compare(const void *left, const void *right) {
    uint64_t a = *(const uint64_t *)left, b = *(const uint64_t *)right;
    return a < b ? -1 : a > b;
}

static void peer_external(int count, int spacing) {
    GMainContext *context = g_main_context_new();
    g_main_context_push_thread_default(context);
    struct peer_watch watch = {dconf_client_new(), calloc((size_t)count, sizeof(uint64_t)), 0, -1};
    g_signal_connect(watch.client, "changed", G_CALLBACK(peer_changed), &watch);
    dconf_client_watch_sync(watch.client, "/bench/stamp");

    int pipe_ends[2];
    if (pipe(pipe_ends) != 0) exit(1);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[0], STDIN_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[1]);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    char count_text[16], spacing_text[16];
    snprintf(count_text, sizeof count_text, "%d", count);
    snprintf(spacing_text, sizeof spacing_text, "%d", spacing);
    char *arguments[] = {"dconf-peer", "writer", count_text, spacing_text, NULL};
    pid_t writer;
    if (posix_spawn(&writer, "/proc/self/exe", &actions, NULL, arguments, environ) != 0) exit(1);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_ends[0]);
    watch.to_writer = pipe_ends[1];

    /* Each change gets at most two seconds; a lost one ends the measurement with what arrived. */
    int received = -1, timed_out = 0;
    GSource *deadline = NULL;
    while (watch.received < count && !timed_out) {
        if (watch.received != received) {
            received = watch.received;
            if (deadline != NULL) {
                g_source_destroy(deadline);
                g_source_unref(deadline);
            }
            deadline = g_timeout_source_new(2000);
            g_source_set_callback(deadline, peer_deadline, &timed_out, NULL);
            g_source_attach(deadline, context);
        }
        g_main_context_iteration(context, TRUE);
    }
    if (deadline != NULL) {
        g_source_destroy(deadline);
        g_source_unref(deadline);
    }
    close(watch.to_writer);
    waitpid(writer, NULL, 0);
    dconf_client_unwatch_sync(watch.client, "/bench/stamp");
    g_object_unref(watch.client);
    g_main_context_pop_thread_default(context);
    g_main_context_unref(context);

    int n = watch.received;
    qsort(watch.latencies, (size_t)n, sizeof(uint64_t), peer_compare);
    printf("%d", n);
    for (int index = 0; index < n; index++) printf(" %llu", (unsigned long long)watch.latencies[index]);
    printf("\n");
    free(watch.latencies);
}

/* Stops the dconf-service that D-Bus activated for this private session, by the PID the bus
 * reports for its name, and waits until it is gone (it is the bus's child, not ours). */
static void peer_stop_service(void) {
    GDBusConnection *bus = g_bus_get_sync(G_BUS_TYPE_SESSION, NULL, NULL);
    if (bus == NULL) return;
    GVariant *reply = g_dbus_connection_call_sync(
        bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetConnectionUnixProcessID",
        g_variant_new("(s)", "ca.desrt.dconf"), G_VARIANT_TYPE("(u)"), G_DBUS_CALL_FLAGS_NONE, 2000, NULL, NULL);
    if (reply == NULL) return;
    guint32 pid;
    g_variant_get(reply, "(u)", &pid);
    g_variant_unref(reply);
    if (pid > 1 && kill((pid_t)pid, SIGTERM) == 0) {
        for (int wait = 0; wait < 200 && kill((pid_t)pid, 0) == 0; wait++) usleep(10000);
    }
}

int main(int argc, char **argv) {
    if (argc == 4 && strcmp(argv[1], "writer") == 0) return peer_writer(atoi(argv[2]), atoi(argv[3]));
    setvbuf(stdout, NULL, _IOLBF, 0);
    peer_client = dconf_client_new();
    char line[256];
    while (fgets(line, sizeof line, stdin) != NULL) {
        char command[32] = "";
        int first = 0, second = 0;
        sscanf(line, "%31s %d %d", command, &first, &second);
        if (strcmp(command, "populate") == 0) peer_populate(first);
        else if (strcmp(command, "read-bool") == 0) peer_read_bool(first);
        else if (strcmp(command, "read-string") == 0) peer_read_string(first);
        else if (strcmp(command, "write-fast") == 0) peer_write_fast(first);
        else if (strcmp(command, "write-sync") == 0) peer_write_sync();
        else if (strcmp(command, "external") == 0) peer_external(first, second);
        else if (strcmp(command, "bus") == 0) {
            // The private session's address, for dconf's own command line (Benchmarks/CommandBenchmark.swift).
            const char *address = getenv("DBUS_SESSION_BUS_ADDRESS");
            printf("%s\n", address ? address : "");
        } else if (strcmp(command, "quit") == 0) break;
        else printf("error unknown command %s\n", command);
    }
    g_object_unref(peer_client);
    peer_stop_service();
    return 0;
}
