/* SPDX-License-Identifier: Apache-2.0 */
/* The /metrics endpoint's request parser on arbitrary bytes. */
#include "cm/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cm_http_req r;

	if (cm_http_req_parse((const char *)data, size, &r) == 0 && r.consumed > size)
		__builtin_trap();
	return 0;
}
