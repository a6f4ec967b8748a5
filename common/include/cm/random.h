/* SPDX-License-Identifier: Apache-2.0 */
/* Random bytes from OpenSSL's CSPRNG, and version-4 UUID strings made from them. */
#ifndef CM_RANDOM_H
#define CM_RANDOM_H

#include "cm/stdinc.h"

/* \return 0, -EIO (the generator failed). */
int cm_random_bytes(void *buf, size_t n);

/* "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx" (36 chars + NUL). \return 0 or -EIO. */
int cm_uuid_generate(char out[37]);

#endif
