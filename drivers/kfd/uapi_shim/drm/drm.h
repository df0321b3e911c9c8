/* Stands in for <drm/drm.h> where the host's kernel headers lack it (Debian's x86-64
 * linux-libc-dev ships linux/kfd_ioctl.h but not drm/drm.h). kfd_ioctl.h includes drm.h but uses
 * nothing from it beyond the fixed-size types, which come from <linux/types.h>. Only on the
 * include path when the real header is missing (targets/amd/CMakeLists.txt). */
#ifndef CAPGRAPH_DRM_SHIM_H
#define CAPGRAPH_DRM_SHIM_H
#include <linux/types.h>
#endif
