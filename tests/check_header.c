// SPDX-License-Identifier: MIT
/*
 * include/ibclient.h on its own, as strict C99: it is the first thing
 * included, only its directory is on the include path, and the build uses
 * -std=c99 -pedantic-errors -Wall -Wextra -Werror. Linking against
 * libibclient checks that the symbols used here are exported.
 */
#include <ibclient.h>
#include <ibclient.h> /* the include guard works */

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			failures++;                                            \
		}                                                              \
	} while (0)

/* The prototypes are what the contract says (a mismatch does not
 * compile). */
static int (*const p_connect)(const struct ibc_connect_attr *,
			      struct ibc_client **) = ibc_connect;
static void (*const p_disconnect)(struct ibc_client *) = ibc_disconnect;
static int (*const p_get_fd)(struct ibc_client *) = ibc_get_fd;
static int (*const p_dispatch)(struct ibc_client *) = ibc_dispatch;
static const char *(*const p_last_error)(void) = ibc_last_error;
static int (*const p_client_info)(struct ibc_client *, struct ibc_client_info *,
				  size_t) = ibc_client_info;
static int (*const p_ping)(struct ibc_client *, const void *,
			   size_t) = ibc_ping;
static int (*const p_status)(struct ibc_client *, struct ibc_status *,
			     size_t) = ibc_status;
/* The ABI growth rule: calls that fill a structure take its size. */
static int (*const p_query)(struct ibc_ctx *, struct ibc_caps *,
			    size_t) = ibc_query;
static int (*const p_list_devices)(struct ibc_client *,
				   struct ibc_device_info **, size_t,
				   size_t *) = ibc_list_devices;
static int (*const p_list_domains)(struct ibc_client *,
				   struct ibc_domain_info **, size_t,
				   size_t *) = ibc_list_domains;
static int (*const p_list_clients)(struct ibc_client *,
				   struct ibc_client_entry **, size_t,
				   size_t *) = ibc_list_clients;
/* The constructors, shaped after libibverbs (issue 8). */
static int (*const p_cq_create)(struct ibc_ctx *, int,
				struct ibc_cq **) = ibc_cq_create;
static int (*const p_cq_create_ex)(struct ibc_ctx *, const struct ibc_cq_attr *,
				   struct ibc_cq **) = ibc_cq_create_ex;
static int (*const p_qp_create)(struct ibc_ctx *, const struct ibc_qp_attr *,
				struct ibc_qp **) = ibc_qp_create;
static uint32_t (*const p_qp_num)(const struct ibc_qp *) = ibc_qp_num;
static int (*const p_srq_create)(struct ibc_ctx *, const struct ibv_srq_attr *,
				 struct ibc_srq **) = ibc_srq_create;
static int (*const p_wq_create)(struct ibc_ctx *, struct ibc_cq *,
				const struct ibc_wq_attr *,
				struct ibc_wq **) = ibc_wq_create;
static uint64_t (*const p_wq_id)(const struct ibc_wq *) = ibc_wq_id;
static int (*const p_reg_mr)(struct ibc_ctx *, void *, size_t, int,
			     struct ibc_mr **) = ibc_reg_mr;
static int (*const p_cq_destroy)(struct ibc_cq *) = ibc_cq_destroy;
static int (*const p_dereg_mr)(struct ibc_mr *) = ibc_dereg_mr;
static struct ibv_cq *(*const p_verbs_cq)(struct ibc_cq *) = ibc_verbs_cq;
static struct ibv_qp *(*const p_verbs_qp)(struct ibc_qp *) = ibc_verbs_qp;
static int (*const p_track)(struct ibc_ctx *, enum ibc_obj_kind,
			    void *) = ibc_track;
static int (*const p_list_objects)(struct ibc_client *,
				   const struct ibc_object_filter *,
				   struct ibc_object_info **, size_t,
				   size_t *) = ibc_list_objects;
static int (*const p_admin_evict)(struct ibc_client *,
				  uint64_t) = ibc_admin_evict;
static enum ibc_fork_state (*const p_fork_state)(void) = ibc_fork_state;

static void on_event(struct ibc_client *client, const struct ibc_event *ev,
		     void *arg)
{
	(void)client;
	(void)ev;
	(void)arg;
}

int main(void)
{
	struct ibc_connect_attr attr = { 0 };
	struct ibc_status st;
	enum ibc_fork_state fs;

	/* Every structure the caller fills or receives starts with
	 * comp_mask. */
	CHECK(offsetof(struct ibc_connect_attr, comp_mask) == 0);
	CHECK(offsetof(struct ibc_event, comp_mask) == 0);
	CHECK(offsetof(struct ibc_client_info, comp_mask) == 0);
	CHECK(offsetof(struct ibc_device_info, comp_mask) == 0);
	CHECK(offsetof(struct ibc_status, comp_mask) == 0);
	CHECK(offsetof(struct ibc_caps, comp_mask) == 0);
	CHECK(offsetof(struct ibc_domain_info, comp_mask) == 0);
	CHECK(offsetof(struct ibc_client_entry, comp_mask) == 0);
	/* Fields added to a structure go at its end. */
	CHECK(offsetof(struct ibc_event, object_id) + sizeof(uint64_t) ==
	      sizeof(struct ibc_event));
	CHECK(offsetof(struct ibc_domain_info, unaccounted) >
	      offsetof(struct ibc_domain_info, retired));
	CHECK(offsetof(struct ibc_client_entry, unaccounted) >
	      offsetof(struct ibc_client_entry, library_version));
	CHECK(sizeof(attr.comp_mask) == 4);
	CHECK(sizeof(st.comp_mask) == 4);

	CHECK(IBC_CONNECT_ATTR_SOCKET == 1);
	CHECK(IBC_CONNECT_ATTR_TIMEOUT == 2);
	CHECK(IBC_CONNECT_ATTR_FLAGS == 4);
	CHECK(IBC_CONNECT_ATTR_EVENT_CB == 8);
	CHECK(IBC_EVENT_SHUTDOWN == 1);
	CHECK(IBC_EVENT_DISCONNECTED == 2);
	CHECK(IBC_FORK_DISABLED == 0);
	CHECK(IBC_FORK_ENABLED == 1);
	CHECK(IBC_FORK_UNNEEDED == 2);
	CHECK(strcmp(IBC_DEFAULT_SOCKET, "/run/rdmabroker.sock") == 0);
	CHECK(IBC_VERSION_MAJOR >= 0 && IBC_VERSION_MINOR >= 0 &&
	      IBC_VERSION_PATCH >= 0);

	attr.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB;
	attr.socket_path = IBC_DEFAULT_SOCKET;
	attr.event_cb = on_event;
	attr.event_arg = NULL;
	CHECK(attr.event_cb == on_event);

	CHECK(p_connect && p_disconnect && p_get_fd && p_dispatch &&
	      p_last_error && p_client_info && p_ping && p_status &&
	      p_fork_state && p_query && p_list_devices && p_list_domains &&
	      p_list_clients);
	CHECK(p_cq_create && p_cq_create_ex && p_qp_create && p_qp_num &&
	      p_srq_create && p_wq_create && p_wq_id && p_reg_mr &&
	      p_verbs_cq && p_verbs_qp && p_track && p_list_objects &&
	      p_admin_evict && p_cq_destroy && p_dereg_mr);
	CHECK(offsetof(struct ibc_cq_attr, comp_mask) == 0);
	CHECK(offsetof(struct ibc_qp_attr, comp_mask) == 0);
	CHECK(offsetof(struct ibc_wq_attr, comp_mask) == 0);
	CHECK(offsetof(struct ibc_object_info, comp_mask) == 0);
	CHECK(offsetof(struct ibc_object_filter, comp_mask) == 0);
	/* Kinds are ABI. */
	CHECK(IBC_OBJ_QP == 1 && IBC_OBJ_CQ == 2 && IBC_OBJ_MR == 5 &&
	      IBC_OBJ_CONTEXT == 13);
	/* Calls that need no broker. */
	CHECK(strcmp(p_last_error(), "") == 0);
	fs = p_fork_state();
	CHECK(fs == IBC_FORK_DISABLED || fs == IBC_FORK_ENABLED ||
	      fs == IBC_FORK_UNNEEDED);
	p_disconnect(NULL);

	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	else
		printf("ibclient.h: C99 ok\n");
	return failures ? 1 : 0;
}
