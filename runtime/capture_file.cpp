#include "capture_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

namespace capgraph {

capture_file::~capture_file() { release(); }

void capture_file::release() {
  if (mapped_)
    munmap(data_, mapped_);
  else
    free(data_);
  data_ = nullptr;
  size_ = mapped_ = 0;
}

capgraph_status capture_file::map(const char *path, std::string *err) {
  release();
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = std::string(path) + ": cannot open: " + strerror(errno);
    return CAPGRAPH_ERR_IO;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    *err = std::string(path) + ": not a regular file";
    close(fd);
    return CAPGRAPH_ERR_IO;
  }
  if (st.st_size == 0) {  // mmap refuses length 0; an empty file is simply not a capture
    close(fd);
    data_ = static_cast<uint8_t *>(aligned_alloc(64, 64));
    if (!data_) return CAPGRAPH_ERR_MEMORY;
    return CAPGRAPH_OK;
  }
  void *p = mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  close(fd);
  if (p == MAP_FAILED) {
    *err = std::string(path) + ": cannot map: " + strerror(map_errno);
    return CAPGRAPH_ERR_IO;
  }
  data_ = static_cast<uint8_t *>(p);
  size_ = mapped_ = size_t(st.st_size);
  return CAPGRAPH_OK;
}

capgraph_status capture_file::copy(const void *data, size_t size, std::string *err) {
  release();
  data_ = static_cast<uint8_t *>(aligned_alloc(64, (size + 63) / 64 * 64 + 64));
  if (!data_) {
    *err = "<memory>: cannot allocate " + std::to_string(size) + " bytes for the capture";
    return CAPGRAPH_ERR_MEMORY;
  }
  if (size) memcpy(data_, data, size);
  size_ = size;
  return CAPGRAPH_OK;
}

}  // namespace capgraph
