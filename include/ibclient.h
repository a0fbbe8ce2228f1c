/* SPDX-License-Identifier: MIT */
/*
 * libibclient: the client side of rdmabroker.
 *
 * Every fallible call returns 0 (or a count) on success and a negative errno
 * on failure; out-parameters named ret_* are written only on success. After
 * a failure, ibc_last_error() gives the broker's sentence for it (per
 * thread). Structures the caller fills or receives start with comp_mask, so
 * that they can grow without breaking the ABI. See libibclient(3).
 */
#ifndef IBCLIENT_H
#define IBCLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define IBC_VERSION_MAJOR 0
#define IBC_VERSION_MINOR 1
#define IBC_VERSION_PATCH 0

/* The socket used when neither the attributes nor $RDMABROKER_SOCKET name
 * one. */
#define IBC_DEFAULT_SOCKET "/run/rdmabroker.sock"

struct ibc_client;

enum ibc_connect_attr_mask {
	IBC_CONNECT_ATTR_SOCKET = 1 << 0,
	IBC_CONNECT_ATTR_TIMEOUT = 1 << 1,
	IBC_CONNECT_ATTR_FLAGS = 1 << 2,
	IBC_CONNECT_ATTR_EVENT_CB = 1 << 3,
};

enum ibc_connect_flags {
	/* Where the broker's context cannot be imported, open the device in
	 * this process instead (see ibc_open(3)). */
	IBC_CONNECT_ALLOW_OWN_CONTEXT = 1 << 0,
};

enum ibc_event_type {
	IBC_EVENT_SHUTDOWN = 1, /* the broker is stopping */
	IBC_EVENT_DISCONNECTED, /* the connection was lost */
};

struct ibc_event {
	uint32_t comp_mask;
	enum ibc_event_type type;
	/* The broker's reason, NUL-terminated; valid during the callback. */
	const char *message;
};

typedef void (*ibc_event_cb)(struct ibc_client *client,
			     const struct ibc_event *event, void *arg);

struct ibc_connect_attr {
	uint32_t comp_mask; /* enum ibc_connect_attr_mask */
	const char *socket_path;
	/* Milliseconds to wait for each reply; 0 waits forever. Default
	 * 30000. */
	int timeout_ms;
	uint32_t flags; /* enum ibc_connect_flags */
	ibc_event_cb event_cb;
	void *event_arg;
};

enum ibc_fork_state {
	IBC_FORK_DISABLED = 0,
	IBC_FORK_ENABLED = 1,
	IBC_FORK_UNNEEDED = 2,
};

/* What the broker told this client when it connected. */
struct ibc_client_info {
	uint32_t comp_mask;
	uint64_t client_id;
	uint32_t protocol_version;
	char daemon_version[32];
	char domain[64];
	uint32_t num_devices;
};

struct ibc_device_info {
	uint32_t comp_mask;
	char name[64];
	char kind[16]; /* "verbs" or "soft" */
};

struct ibc_status {
	uint32_t comp_mask;
	char daemon_version[32];
	uint32_t protocol_version;
	uint32_t daemon_pid;
	uint64_t uptime_usec;
	char device_kind[16];
	uint32_t clients;
	uint32_t max_clients;
	uint64_t requests_served;
};

/**
 * ibc_connect() - connect to the broker and introduce this process.
 * @attr: NULL for the defaults, $RDMABROKER_SOCKET or IBC_DEFAULT_SOCKET.
 * @ret_client: the new client, to be freed with ibc_disconnect().
 */
int ibc_connect(const struct ibc_connect_attr *attr,
		struct ibc_client **ret_client);

/** ibc_disconnect() - close the session; NULL is ignored. */
void ibc_disconnect(struct ibc_client *client);

/**
 * ibc_get_fd() - a descriptor that polls readable when ibc_dispatch() has
 * work to do. Owned by the client; do not close it.
 */
int ibc_get_fd(struct ibc_client *client);

/**
 * ibc_dispatch() - read what the broker sent without blocking and deliver
 * pending events to the event callback. Returns the number of events
 * delivered, or -ECONNRESET once the connection is gone.
 */
int ibc_dispatch(struct ibc_client *client);

/**
 * ibc_last_error() - the broker's sentence for the calling thread's last
 * failed call, or "" when there is none. Valid until the thread's next call.
 */
const char *ibc_last_error(void);

/** ibc_client_info() - what the broker said at connect. */
int ibc_client_info(struct ibc_client *client, struct ibc_client_info *ret);

/** ibc_list_devices() - the broker's devices; returns how many were
 * written (at most @max), or how many exist when @ret is NULL. */
int ibc_list_devices(struct ibc_client *client, struct ibc_device_info *ret,
		     size_t max);

/** ibc_ping() - one round trip carrying @len bytes (at most 60000). */
int ibc_ping(struct ibc_client *client, const void *payload, size_t len);

/** ibc_status() - the broker's version, uptime and counters. */
int ibc_status(struct ibc_client *client, struct ibc_status *ret);

/** ibc_fork_state() - this process's fork protection, as libibverbs sees
 * it. */
enum ibc_fork_state ibc_fork_state(void);

#ifdef __cplusplus
}
#endif

#endif
