/* SPDX-License-Identifier: Apache-2.0 */
#include "mon/proto.h"
#include "cm/stdinc.h"

#include <ctype.h>

int
mon_parse_hosts(const char *s, struct mon_addr **vp, size_t *np, char *err, size_t errlen)
{
	struct mon_addr *v = NULL;
	size_t n = 0;
	const char *p = s;

	while (p && *p) {
		const char *end = strchr(p, ','), *eq;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		struct mon_addr *nv, *a;
		char item[256];

		while (len && isspace((unsigned char)*p)) {
			p++;
			len--;
		}
		while (len && isspace((unsigned char)p[len - 1]))
			len--;
		if (!len || len >= sizeof(item)) {
			snprintf(err, errlen, "mon_host entry %zu is %s", n + 1,
				 len ? "too long" : "empty");
			free(v);
			return -EINVAL;
		}
		memcpy(item, p, len);
		item[len] = 0;
		nv = realloc(v, sizeof(*v) * (n + 1));
		if (!nv) {
			free(v);
			return -ENOMEM;
		}
		v = nv;
		a = &v[n];
		memset(a, 0, sizeof(*a));
		eq = strchr(item, '=');
		if (eq) {
			size_t nl = (size_t)(eq - item);

			if (!nl || nl >= sizeof(a->name) || !eq[1]) {
				snprintf(err, errlen, "mon_host entry '%s': expected NAME=IP:PORT",
					 item);
				free(v);
				return -EINVAL;
			}
			memcpy(a->name, item, nl);
			eq++;
		} else {
			snprintf(a->name, sizeof(a->name), "%zu", n);
			eq = item;
		}
		if (strlen(eq) >= sizeof(a->addr)) {
			snprintf(err, errlen, "mon_host entry %zu: address too long", n + 1);
			free(v);
			return -EINVAL;
		}
		memcpy(a->addr, eq, strlen(eq) + 1);
		if (!strrchr(a->addr, ':')) {
			snprintf(err, errlen, "mon_host entry '%s': the address needs a port",
				 item);
			free(v);
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++) {
			if (strcmp(v[i].name, a->name) == 0) {
				snprintf(err, errlen, "mon_host names mon '%s' twice", a->name);
				free(v);
				return -EINVAL;
			}
		}
		n++;
		p = end ? end + 1 : NULL;
	}
	if (!n) {
		snprintf(err, errlen, "mon_host is empty");
		return -EINVAL;
	}
	*vp = v;
	*np = n;
	return 0;
}
