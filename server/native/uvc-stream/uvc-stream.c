/*
 * uvc-stream: the userspace half of the board's USB webcam (the kernel's UVC gadget function,
 * usb_f_uvc). The kernel passes the remote computer's UVC class requests up as V4L2 events on
 * the gadget's video node; this program answers them (probe/commit of the one format, a
 * brightness control that is stored and ignored, the request error code) and, while the remote
 * computer streams, hands it frames through the node's output queue.
 *
 * Written for this project from the facts of the kernel's userspace API (linux/usb/g_uvc.h,
 * linux/usb/video.h, linux/videodev2.h) and the UVC 1.1 class specification; no code of other
 * programs is used.
 *
 * Usage: uvc-stream --device /dev/videoN [--width 640] [--height 480] [--fps 30]
 *                   [--streaming-intf N] [--buffers 3] [--stall-ms 2000]
 *
 * stdin: frames, each a 4-byte little-endian length and that many bytes of YUYV (4:2:2, width x
 * height x 2 bytes). A frame of another size is skipped and counted. Only the newest frame is
 * kept: frames that arrive while the remote computer does not take them replace each other, so
 * memory stays at one frame plus the kernel's buffers whatever the host does.
 *
 * stdout: one status line per change, then `stats` every second while anything moves:
 *   ready <device> <width>x<height>
 *   connect | disconnect
 *   streamon | streamoff
 *   reading | stalled          (the host took a buffer / took none for --stall-ms while streaming)
 *   stats in=<frames read> sent=<frames the host took> dropped=<replaced unsent> bad=<wrong size>
 *   error <text>               (then exit 1; the server restarts it with a back-off)
 * The program exits 0 when stdin ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/usb/ch9.h>
#include <linux/usb/g_uvc.h>
#include <linux/usb/video.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_BUFFERS 8

struct buffer {
  void *mem;
  size_t length;
  int queued;
};

static struct {
  const char *device;
  unsigned width, height, fps, nbufs, stall_ms;
  int streaming_intf; /* -1: told apart by the request's length */
  int fd;
  size_t frame_size;
  /* the newest frame read and not yet handed to the kernel */
  uint8_t *latest;
  int latest_fresh;
  /* stdin framing */
  uint8_t hdr[4];
  size_t hdr_got;
  uint8_t *incoming;
  size_t in_len, in_got;
  int skipping;
  /* streaming */
  int streaming, stalled;
  struct buffer bufs[MAX_BUFFERS];
  unsigned nmapped;
  uint64_t last_dequeue_ms;
  /* control requests */
  struct uvc_streaming_control probe, commit;
  int pending_control; /* the SET_CUR whose data comes next: 1 probe, 2 commit, 3 brightness */
  int16_t brightness;
  /* counters */
  unsigned long frames_in, frames_sent, frames_dropped, frames_bad;
  unsigned long shown_in, shown_sent;
} s;

static uint64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void say(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stdout, fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
  fflush(stdout);
}

static void die(const char *what) {
  say("error %s: %s", what, strerror(errno));
  exit(1);
}

static int xioctl(int fd, unsigned long req, void *arg) {
  int r;
  do r = ioctl(fd, req, arg);
  while (r < 0 && errno == EINTR);
  return r;
}

/* ---- probe and commit (UVC 1.1, 4.3.1.1) ---- */

static uint32_t frame_interval(void) { return 10000000u / (s.fps ? s.fps : 30); }

static void fill_control(struct uvc_streaming_control *c) {
  memset(c, 0, sizeof *c);
  c->bmHint = 1; /* dwFrameInterval fixed */
  c->bFormatIndex = 1;
  c->bFrameIndex = 1;
  c->dwFrameInterval = frame_interval();
  c->dwMaxVideoFrameSize = (uint32_t)s.frame_size;
  /* the gadget splits a frame into the endpoint's packets itself; the host sizes its URBs */
  c->dwMaxPayloadTransferSize = 3072;
  c->bmFramingInfo = 3;
  c->bPreferedVersion = 1;
  c->bMinVersion = 1;
  c->bMaxVersion = 1;
}

/* What the host asked for, brought to what we serve: one format, one frame, our intervals. */
static void take_control(struct uvc_streaming_control *dst, const uint8_t *data, int len) {
  struct uvc_streaming_control in;
  memset(&in, 0, sizeof in);
  /* the data phase's length comes from the host: never trust its sign or size */
  if (len < 0) len = 0;
  memcpy(&in, data, len < (int)sizeof in ? (size_t)len : sizeof in);
  fill_control(dst);
  if (in.dwFrameInterval >= frame_interval()) dst->dwFrameInterval = in.dwFrameInterval;
  if (dst->dwFrameInterval > 10000000u) dst->dwFrameInterval = 10000000u;
}

static void respond(const void *data, int len) {
  struct uvc_request_data r;
  memset(&r, 0, sizeof r);
  if (len < 0) len = 0;
  r.length = len;
  /* a SET_CUR's answer is its length alone (the data phase follows as UVC_EVENT_DATA) */
  if (data && len > 0)
    memcpy(r.data, data, (size_t)len > sizeof r.data ? sizeof r.data : (size_t)len);
  if (xioctl(s.fd, UVCIOC_SEND_RESPONSE, &r) < 0) die("UVCIOC_SEND_RESPONSE");
}

static void stall(void) { respond(NULL, -EL2HLT); }

static void streaming_request(uint8_t req, uint8_t cs, uint16_t wlen) {
  struct uvc_streaming_control c;
  int len = wlen < sizeof c ? wlen : (int)sizeof c;
  if (cs != UVC_VS_PROBE_CONTROL && cs != UVC_VS_COMMIT_CONTROL) return stall();
  switch (req) {
  case UVC_SET_CUR:
    s.pending_control = cs == UVC_VS_PROBE_CONTROL ? 1 : 2;
    return respond(NULL, wlen);
  case UVC_GET_CUR:
    c = cs == UVC_VS_PROBE_CONTROL ? s.probe : s.commit;
    return respond(&c, len);
  case UVC_GET_MIN:
  case UVC_GET_MAX:
  case UVC_GET_DEF:
    fill_control(&c);
    return respond(&c, len);
  case UVC_GET_RES:
    memset(&c, 0, sizeof c);
    return respond(&c, len);
  case UVC_GET_LEN: {
    uint8_t l[2] = {sizeof c, 0};
    return respond(l, wlen < 2 ? wlen : 2);
  }
  case UVC_GET_INFO: {
    uint8_t info = 3; /* GET and SET */
    return respond(&info, 1);
  }
  default:
    return stall();
  }
}

static void control_request(uint8_t req, uint8_t cs, uint8_t entity, uint16_t wlen) {
  if (entity == 0 && cs == UVC_VC_REQUEST_ERROR_CODE_CONTROL && req == UVC_GET_CUR) {
    uint8_t none = 0;
    return respond(&none, 1);
  }
  /* the default processing unit (id 2) has brightness */
  if (entity == 2 && cs == UVC_PU_BRIGHTNESS_CONTROL) {
    int16_t v;
    switch (req) {
    case UVC_SET_CUR: s.pending_control = 3; return respond(NULL, wlen);
    case UVC_GET_CUR: v = s.brightness; return respond(&v, 2);
    case UVC_GET_MIN: v = 0; return respond(&v, 2);
    case UVC_GET_MAX: v = 255; return respond(&v, 2);
    case UVC_GET_RES: v = 1; return respond(&v, 2);
    case UVC_GET_DEF: v = 128; return respond(&v, 2);
    case UVC_GET_INFO: { uint8_t info = 3; return respond(&info, 1); }
    case UVC_GET_LEN: { uint8_t l[2] = {2, 0}; return respond(l, 2); }
    }
  }
  stall();
}

static void on_setup(const struct usb_ctrlrequest *ctrl) {
  uint8_t req = ctrl->bRequest;
  uint8_t cs = ctrl->wValue >> 8;
  uint8_t intf = ctrl->wIndex & 0xff, entity = ctrl->wIndex >> 8;
  s.pending_control = 0;
  if ((ctrl->bRequestType & USB_TYPE_MASK) != USB_TYPE_CLASS ||
      (ctrl->bRequestType & USB_RECIP_MASK) != USB_RECIP_INTERFACE)
    return stall();
  int streaming = s.streaming_intf >= 0
                      ? intf == s.streaming_intf
                      : entity == 0 && (cs == UVC_VS_PROBE_CONTROL || cs == UVC_VS_COMMIT_CONTROL) &&
                            ctrl->wLength >= 26;
  if (streaming) streaming_request(req, cs, ctrl->wLength);
  else control_request(req, cs, entity, ctrl->wLength);
}

static void on_data(const struct uvc_request_data *d) {
  switch (s.pending_control) {
  case 1: take_control(&s.probe, d->data, d->length); break;
  case 2: take_control(&s.commit, d->data, d->length); break;
  case 3: if (d->length >= 2) memcpy(&s.brightness, d->data, 2); break;
  }
  s.pending_control = 0;
}

/* ---- the output queue ---- */

static void queue_buffer(unsigned i) {
  struct v4l2_buffer b;
  memcpy(s.bufs[i].mem, s.latest, s.frame_size);
  s.latest_fresh = 0;
  memset(&b, 0, sizeof b);
  b.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  b.memory = V4L2_MEMORY_MMAP;
  b.index = i;
  b.bytesused = (uint32_t)s.frame_size;
  if (xioctl(s.fd, VIDIOC_QBUF, &b) < 0) {
    /* the host went away between the event and this: the buffer stays ours */
    if (errno == ENODEV || errno == ESHUTDOWN || errno == EINVAL) return;
    die("VIDIOC_QBUF");
  }
  s.bufs[i].queued = 1;
}

static void queue_fresh(void) {
  if (!s.streaming || !s.latest_fresh) return;
  for (unsigned i = 0; i < s.nmapped; i++) {
    if (!s.bufs[i].queued) {
      queue_buffer(i);
      return;
    }
  }
}

static void stop_streaming(void) {
  int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  struct v4l2_requestbuffers rb;
  if (!s.streaming) return;
  xioctl(s.fd, VIDIOC_STREAMOFF, &type);
  for (unsigned i = 0; i < s.nmapped; i++) munmap(s.bufs[i].mem, s.bufs[i].length);
  s.nmapped = 0;
  memset(&rb, 0, sizeof rb);
  rb.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  rb.memory = V4L2_MEMORY_MMAP;
  xioctl(s.fd, VIDIOC_REQBUFS, &rb);
  s.streaming = 0;
  s.stalled = 0;
  say("streamoff");
}

static void start_streaming(void) {
  struct v4l2_requestbuffers rb;
  int type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  if (s.streaming) stop_streaming();
  memset(&rb, 0, sizeof rb);
  rb.count = s.nbufs;
  rb.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  rb.memory = V4L2_MEMORY_MMAP;
  if (xioctl(s.fd, VIDIOC_REQBUFS, &rb) < 0) die("VIDIOC_REQBUFS");
  if (rb.count > MAX_BUFFERS) rb.count = MAX_BUFFERS;
  for (unsigned i = 0; i < rb.count; i++) {
    struct v4l2_buffer b;
    memset(&b, 0, sizeof b);
    b.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
    b.memory = V4L2_MEMORY_MMAP;
    b.index = i;
    if (xioctl(s.fd, VIDIOC_QUERYBUF, &b) < 0) die("VIDIOC_QUERYBUF");
    s.bufs[i].length = b.length;
    s.bufs[i].mem = mmap(NULL, b.length, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, b.m.offset);
    if (s.bufs[i].mem == MAP_FAILED) die("mmap");
    if (b.length < s.frame_size) {
      errno = ENOSPC;
      die("buffer smaller than a frame");
    }
    s.bufs[i].queued = 0;
    s.nmapped = i + 1;
  }
  s.streaming = 1;
  s.stalled = 0;
  s.last_dequeue_ms = now_ms();
  /* the host gets a picture at once: the newest frame, or black until the first arrives */
  s.latest_fresh = 1;
  queue_fresh();
  if (xioctl(s.fd, VIDIOC_STREAMON, &type) < 0) die("VIDIOC_STREAMON");
  say("streamon");
}

static void dequeue(void) {
  struct v4l2_buffer b;
  memset(&b, 0, sizeof b);
  b.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  b.memory = V4L2_MEMORY_MMAP;
  while (xioctl(s.fd, VIDIOC_DQBUF, &b) == 0) {
    if (b.index < s.nmapped) s.bufs[b.index].queued = 0;
    s.frames_sent++;
    s.last_dequeue_ms = now_ms();
    if (s.stalled) {
      s.stalled = 0;
      say("reading");
    }
    queue_fresh();
  }
}

static void on_event(void) {
  struct v4l2_event ev;
  memset(&ev, 0, sizeof ev);
  if (xioctl(s.fd, VIDIOC_DQEVENT, &ev) < 0) return;
  const struct uvc_event *u = (const void *)&ev.u.data;
  switch (ev.type) {
  case UVC_EVENT_CONNECT: say("connect"); break;
  case UVC_EVENT_DISCONNECT: stop_streaming(); say("disconnect"); break;
  case UVC_EVENT_SETUP: on_setup(&u->req); break;
  case UVC_EVENT_DATA: on_data(&u->data); break;
  case UVC_EVENT_STREAMON: start_streaming(); break;
  case UVC_EVENT_STREAMOFF: stop_streaming(); break;
  }
}

/* ---- stdin: [u32 LE length][frame] ---- */

static void frame_done(void) {
  if (s.skipping) {
    s.frames_bad++;
  } else {
    if (s.latest_fresh && s.streaming) s.frames_dropped++;
    uint8_t *t = s.latest;
    s.latest = s.incoming;
    s.incoming = t;
    s.latest_fresh = 1;
    s.frames_in++;
    queue_fresh();
  }
  s.hdr_got = 0;
  s.in_got = 0;
  s.skipping = 0;
}

/* Returns 0 at the end of stdin. */
static int read_stdin(void) {
  static uint8_t scratch[65536];
  ssize_t n;
  if (s.hdr_got < 4) {
    n = read(0, s.hdr + s.hdr_got, 4 - s.hdr_got);
    if (n == 0) return 0;
    if (n < 0) return errno == EAGAIN || errno == EINTR ? 1 : (die("read stdin"), 0);
    s.hdr_got += (size_t)n;
    if (s.hdr_got == 4) {
      s.in_len = (size_t)s.hdr[0] | (size_t)s.hdr[1] << 8 | (size_t)s.hdr[2] << 16 |
                 (size_t)s.hdr[3] << 24;
      s.in_got = 0;
      s.skipping = s.in_len != s.frame_size;
      if (s.in_len == 0) frame_done();
    }
    return 1;
  }
  size_t want = s.in_len - s.in_got;
  if (s.skipping) {
    n = read(0, scratch, want < sizeof scratch ? want : sizeof scratch);
  } else {
    n = read(0, s.incoming + s.in_got, want);
  }
  if (n == 0) return 0;
  if (n < 0) return errno == EAGAIN || errno == EINTR ? 1 : (die("read stdin"), 0);
  s.in_got += (size_t)n;
  if (s.in_got == s.in_len) frame_done();
  return 1;
}

static void black(uint8_t *p) {
  for (size_t i = 0; i + 3 < s.frame_size; i += 4) {
    p[i] = 16;
    p[i + 1] = 128;
    p[i + 2] = 16;
    p[i + 3] = 128;
  }
}

static void usage(void) {
  fprintf(stderr, "usage: uvc-stream --device /dev/videoN [--width 640] [--height 480] [--fps 30]"
                  " [--streaming-intf N] [--buffers 3] [--stall-ms 2000]\n");
  exit(2);
}

int main(int argc, char **argv) {
  s.width = 640;
  s.height = 480;
  s.fps = 30;
  s.nbufs = 3;
  s.stall_ms = 2000;
  s.streaming_intf = -1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) usage();
    const char *v = argv[++i];
    if (!strcmp(a, "--device")) s.device = v;
    else if (!strcmp(a, "--width")) s.width = (unsigned)atoi(v);
    else if (!strcmp(a, "--height")) s.height = (unsigned)atoi(v);
    else if (!strcmp(a, "--fps")) s.fps = (unsigned)atoi(v);
    else if (!strcmp(a, "--streaming-intf")) s.streaming_intf = atoi(v);
    else if (!strcmp(a, "--buffers")) s.nbufs = (unsigned)atoi(v);
    else if (!strcmp(a, "--stall-ms")) s.stall_ms = (unsigned)atoi(v);
    else usage();
  }
  if (!s.device || !s.width || !s.height || s.width > 4096 || s.height > 4096 || !s.fps ||
      s.fps > 120 || !s.nbufs || s.nbufs > MAX_BUFFERS)
    usage();
  signal(SIGPIPE, SIG_IGN);
  s.frame_size = (size_t)s.width * s.height * 2;
  s.latest = malloc(s.frame_size);
  s.incoming = malloc(s.frame_size);
  if (!s.latest || !s.incoming) die("malloc");
  black(s.latest);
  fill_control(&s.probe);
  fill_control(&s.commit);
  s.brightness = 128;

  s.fd = open(s.device, O_RDWR | O_NONBLOCK);
  if (s.fd < 0) die(s.device);
  struct v4l2_capability cap;
  if (xioctl(s.fd, VIDIOC_QUERYCAP, &cap) < 0) die("VIDIOC_QUERYCAP");
  if (!((cap.capabilities & V4L2_CAP_DEVICE_CAPS ? cap.device_caps : cap.capabilities) &
        V4L2_CAP_VIDEO_OUTPUT)) {
    errno = ENOTTY;
    die("not a UVC gadget's video node (no video output)");
  }
  struct v4l2_format fmt;
  memset(&fmt, 0, sizeof fmt);
  fmt.type = V4L2_BUF_TYPE_VIDEO_OUTPUT;
  fmt.fmt.pix.width = s.width;
  fmt.fmt.pix.height = s.height;
  fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV;
  fmt.fmt.pix.field = V4L2_FIELD_NONE;
  fmt.fmt.pix.sizeimage = (uint32_t)s.frame_size;
  if (xioctl(s.fd, VIDIOC_S_FMT, &fmt) < 0) die("VIDIOC_S_FMT");
  static const unsigned events[] = {UVC_EVENT_CONNECT,  UVC_EVENT_DISCONNECT, UVC_EVENT_SETUP,
                                    UVC_EVENT_DATA,     UVC_EVENT_STREAMON,   UVC_EVENT_STREAMOFF};
  for (unsigned i = 0; i < sizeof events / sizeof events[0]; i++) {
    struct v4l2_event_subscription sub;
    memset(&sub, 0, sizeof sub);
    sub.type = events[i];
    if (xioctl(s.fd, VIDIOC_SUBSCRIBE_EVENT, &sub) < 0) die("VIDIOC_SUBSCRIBE_EVENT");
  }
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  say("ready %s %ux%u", s.device, s.width, s.height);

  uint64_t last_stats = now_ms();
  for (;;) {
    struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = s.fd, .events = POLLPRI}};
    if (s.streaming) p[1].events |= POLLOUT;
    int r = poll(p, 2, 250);
    if (r < 0 && errno != EINTR) die("poll");
    if (p[1].revents & POLLPRI) on_event();
    if (s.streaming && (p[1].revents & POLLOUT)) dequeue();
    if (p[1].revents & (POLLERR | POLLHUP) && !(p[1].revents & (POLLPRI | POLLOUT))) {
      errno = ENODEV;
      die(s.device);
    }
    if (p[0].revents & (POLLIN | POLLHUP)) {
      if (!read_stdin()) {
        stop_streaming();
        say("stats in=%lu sent=%lu dropped=%lu bad=%lu", s.frames_in, s.frames_sent,
            s.frames_dropped, s.frames_bad);
        return 0;
      }
    }
    uint64_t t = now_ms();
    if (s.streaming && !s.stalled) {
      int waiting = 0;
      for (unsigned i = 0; i < s.nmapped; i++) waiting |= s.bufs[i].queued;
      if (waiting && t - s.last_dequeue_ms > s.stall_ms) {
        s.stalled = 1;
        say("stalled");
      }
    }
    if (t - last_stats >= 1000) {
      last_stats = t;
      if (s.frames_in != s.shown_in || s.frames_sent != s.shown_sent) {
        s.shown_in = s.frames_in;
        s.shown_sent = s.frames_sent;
        say("stats in=%lu sent=%lu dropped=%lu bad=%lu", s.frames_in, s.frames_sent,
            s.frames_dropped, s.frames_bad);
      }
    }
  }
}
