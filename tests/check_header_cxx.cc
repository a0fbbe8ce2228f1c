// SPDX-License-Identifier: MIT
/*
 * include/ibclient.h on its own, as C++11 (-std=c++11 -pedantic-errors
 * -Wall -Wextra -Werror): it must compile, declare C linkage (linking
 * against libibclient fails otherwise) and keep its types and values.
 */
#include <ibclient.h>
#include <ibclient.h> // the include guard works

#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>

/*
 * ibc_client_info, ibc_status and ibc_fork_state name both a type and a
 * function: in C++ the function hides the type, which then needs its
 * "struct" or "enum" keyword.
 */

static_assert(offsetof(ibc_connect_attr, comp_mask) == 0,
	      "ibc_connect_attr starts with comp_mask");
static_assert(offsetof(ibc_event, comp_mask) == 0,
	      "ibc_event starts with comp_mask");
static_assert(offsetof(struct ibc_client_info, comp_mask) == 0,
	      "ibc_client_info starts with comp_mask");
static_assert(offsetof(ibc_device_info, comp_mask) == 0,
	      "ibc_device_info starts with comp_mask");
static_assert(offsetof(struct ibc_status, comp_mask) == 0,
	      "ibc_status starts with comp_mask");
static_assert(sizeof(ibc_connect_attr::comp_mask) == 4, "comp_mask is 32 bits");
static_assert(std::is_standard_layout<ibc_connect_attr>::value,
	      "C layout");
static_assert(std::is_trivial<struct ibc_status>::value, "C layout");

static_assert(IBC_EVENT_SHUTDOWN == 1, "event values are ABI");
static_assert(IBC_EVENT_DISCONNECTED == 2, "event values are ABI");
static_assert(IBC_FORK_DISABLED == 0 && IBC_FORK_ENABLED == 1 &&
		      IBC_FORK_UNNEEDED == 2,
	      "fork states are ABI");
static_assert(IBC_CONNECT_ATTR_SOCKET == 1 && IBC_CONNECT_ATTR_TIMEOUT == 2 &&
		      IBC_CONNECT_ATTR_FLAGS == 4 &&
		      IBC_CONNECT_ATTR_EVENT_CB == 8,
	      "attribute bits are ABI");

static_assert(std::is_same<decltype(&ibc_connect),
			   int (*)(const ibc_connect_attr *,
				   ibc_client **)>::value,
	      "ibc_connect");
static_assert(std::is_same<decltype(&ibc_disconnect),
			   void (*)(ibc_client *)>::value,
	      "ibc_disconnect");
static_assert(std::is_same<decltype(&ibc_get_fd), int (*)(ibc_client *)>::value,
	      "ibc_get_fd");
static_assert(std::is_same<decltype(&ibc_dispatch),
			   int (*)(ibc_client *)>::value,
	      "ibc_dispatch");
static_assert(std::is_same<decltype(&ibc_last_error),
			   const char *(*)()>::value,
	      "ibc_last_error");
static_assert(std::is_same<decltype(&ibc_query),
			   int (*)(ibc_ctx *, ibc_caps *, std::size_t)>::value,
	      "ibc_query takes the caller's struct size");
static_assert(std::is_same<decltype(&ibc_list_clients),
			   int (*)(ibc_client *, ibc_client_entry **,
				   std::size_t, std::size_t *)>::value,
	      "ibc_list_clients takes the caller's entry size");
static_assert(std::is_same<decltype(&ibc_cq_create),
			   int (*)(ibc_ctx *, int, ibc_cq **)>::value,
	      "ibc_cq_create");
static_assert(std::is_same<decltype(&ibc_qp_create),
			   int (*)(ibc_ctx *, const ibc_qp_attr *,
				   ibc_qp **)>::value,
	      "ibc_qp_create");
static_assert(std::is_same<decltype(&ibc_verbs_qp),
			   ibv_qp *(*)(ibc_qp *)>::value,
	      "ibc_verbs_qp gives the libibverbs QP");
static_assert(std::is_standard_layout<ibc_qp_attr>::value, "C layout");
static_assert(std::is_same<decltype(&ibc_ping),
			   int (*)(ibc_client *, const void *,
				   std::size_t)>::value,
	      "ibc_ping");

static void on_event(ibc_client *, const ibc_event *, void *)
{
}

int main()
{
	ibc_connect_attr attr = {};
	int failures = 0;

	attr.comp_mask = IBC_CONNECT_ATTR_SOCKET | IBC_CONNECT_ATTR_EVENT_CB;
	attr.socket_path = IBC_DEFAULT_SOCKET;
	attr.event_cb = on_event;
	if (attr.event_cb != on_event)
		failures++;
	if (std::strcmp(ibc_last_error(), "") != 0)
		failures++;
	/* The function hides the enum's name: C++ needs "enum" here. */
	enum ibc_fork_state fs = ibc_fork_state();
	if (fs != IBC_FORK_DISABLED && fs != IBC_FORK_ENABLED &&
	    fs != IBC_FORK_UNNEEDED)
		failures++;
	ibc_disconnect(nullptr);
	std::printf("ibclient.h: C++11 %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
