/*
 * snd: the test guest's sound commands (scripts/build-guest.mjs builds it with `gcc -static`).
 * ALSA through the kernel's PCM ioctls (sound/asound.h), so the guest needs no alsa-lib.
 * The arithmetic is the one of server/src/drivers/audio/tone.ts: a sine, Goertzel with a Hann
 * window, RMS of the first channel.
 *
 *   snd tone <hz> <seconds>    plays a sine, both channels, -6 dBFS; `tone start <hz>` just
 *                              before the first sample is written, `tone end` once played,
 *                              after `tone underruns <n>` if the guest was late n times
 *   snd hear <hz> <seconds>    records until <hz> is present in a 20 ms window: `hear start
 *                              <hz> <rms>` once the first 20 ms are in (their RMS, 0..1: what
 *                              sounded as it began), `heard <hz>` then `hear end`, or `hear
 *                              none` after <seconds>
 *   snd listen <seconds>       records, then `listen <dominant hz> <rms 0..1>` (hz 0: silence)
 *
 * Lines go to stdout (the guest's wrappers point it at ttyS0), unbuffered. The card is the
 * first one (QEMU's intel-hda + hda-duplex): /dev/snd/pcmC0D0p and pcmC0D0c.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <sound/asound.h>

#define RATE 48000
#define CHANNELS 2
/* 10 ms periods: HDA wants period bytes in steps of 128 (480 frames * 4 bytes = 15 * 128). */
#define PERIOD 480
#define WINDOW 960 /* 20 ms: what `hear` looks at */

/*
 * 32 periods (320 ms) of buffer ride out a busy TCG host (a vCPU that does not run for a while);
 * the first sample still leaves at once (start_threshold is one period), so a tone's start is
 * not delayed by it. SND_PERIODS=n (2-32) overrides it.
 */
static int periods = 32;
/* Underruns (playback) and overruns (capture) recovered from, reported by `tone`. */
static long xruns;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n > 0 && write(1, line, (size_t)n) < 0) exit(1);
}

static void die(const char *what) {
  say("snd: %s: %s\n", what, strerror(errno));
  exit(1);
}

static struct snd_mask *mask(struct snd_pcm_hw_params *p, int n) {
  return &p->masks[n - SNDRV_PCM_HW_PARAM_FIRST_MASK];
}

static struct snd_interval *interval(struct snd_pcm_hw_params *p, int n) {
  return &p->intervals[n - SNDRV_PCM_HW_PARAM_FIRST_INTERVAL];
}

static void set_mask(struct snd_pcm_hw_params *p, int n, unsigned v) {
  struct snd_mask *m = mask(p, n);
  memset(m->bits, 0, sizeof m->bits);
  m->bits[v >> 5] |= 1u << (v & 31);
}

static void set_value(struct snd_pcm_hw_params *p, int n, unsigned v) {
  struct snd_interval *i = interval(p, n);
  i->min = i->max = v;
  i->integer = 1;
}

/* Opens the first card's PCM as s16le stereo 48 kHz with 10 ms periods; returns the fd. */
static int pcm_open(int capture) {
  const char *dev = capture ? "/dev/snd/pcmC0D0c" : "/dev/snd/pcmC0D0p";
  int fd = open(dev, O_RDWR | O_CLOEXEC);
  if (fd < 0) die(dev);
  struct snd_pcm_hw_params hw;
  memset(&hw, 0, sizeof hw);
  for (int n = SNDRV_PCM_HW_PARAM_FIRST_MASK; n <= SNDRV_PCM_HW_PARAM_LAST_MASK; n++)
    memset(mask(&hw, n)->bits, 0xff, sizeof mask(&hw, n)->bits);
  for (int n = SNDRV_PCM_HW_PARAM_FIRST_INTERVAL; n <= SNDRV_PCM_HW_PARAM_LAST_INTERVAL; n++)
    interval(&hw, n)->max = UINT_MAX;
  hw.rmask = ~0u;
  hw.info = ~0u;
  set_mask(&hw, SNDRV_PCM_HW_PARAM_ACCESS, SNDRV_PCM_ACCESS_RW_INTERLEAVED);
  set_mask(&hw, SNDRV_PCM_HW_PARAM_FORMAT, SNDRV_PCM_FORMAT_S16_LE);
  set_mask(&hw, SNDRV_PCM_HW_PARAM_SUBFORMAT, SNDRV_PCM_SUBFORMAT_STD);
  set_value(&hw, SNDRV_PCM_HW_PARAM_CHANNELS, CHANNELS);
  set_value(&hw, SNDRV_PCM_HW_PARAM_RATE, RATE);
  set_value(&hw, SNDRV_PCM_HW_PARAM_PERIOD_SIZE, PERIOD);
  set_value(&hw, SNDRV_PCM_HW_PARAM_PERIODS, (unsigned)periods);
  if (ioctl(fd, SNDRV_PCM_IOCTL_HW_PARAMS, &hw) < 0) die("hw params");
  unsigned long buffer = (unsigned long)PERIOD * (unsigned long)periods;
  struct snd_pcm_sw_params sw;
  memset(&sw, 0, sizeof sw);
  sw.period_step = 1;
  sw.avail_min = PERIOD;
  /* Playback starts as soon as one period is queued; capture at the first read. */
  sw.start_threshold = capture ? 1 : PERIOD;
  sw.stop_threshold = buffer;
  sw.boundary = buffer;
  while (sw.boundary * 2 <= LONG_MAX - buffer) sw.boundary *= 2;
  sw.proto = SNDRV_PCM_VERSION;
  if (ioctl(fd, SNDRV_PCM_IOCTL_SW_PARAMS, &sw) < 0) die("sw params");
  if (ioctl(fd, SNDRV_PCM_IOCTL_PREPARE) < 0) die("prepare");
  return fd;
}

/* Writes or reads `frames` frames, recovering from an xrun (a late guest under TCG). */
static void transfer(int fd, int capture, short *buf, unsigned long frames) {
  while (frames > 0) {
    struct snd_xferi x = {.buf = buf, .frames = frames};
    if (ioctl(fd, capture ? SNDRV_PCM_IOCTL_READI_FRAMES : SNDRV_PCM_IOCTL_WRITEI_FRAMES, &x) <
        0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      if (errno == EPIPE || errno == ESTRPIPE) {
        xruns++;
        if (ioctl(fd, SNDRV_PCM_IOCTL_PREPARE) < 0) die("prepare");
        continue;
      }
      die(capture ? "read" : "write");
    }
    buf += x.result * CHANNELS;
    frames -= (unsigned long)x.result;
  }
}

/* Amplitude of `hz` in the first channel, 0..1 (as toneLevel of tone.ts). */
/* The Hann window of the last length asked for: cos() is slow under TCG, and the guest's CPU
 * is the VM's (a busy vCPU delays QEMU's own sound timer). */
static const double *hann(int n) {
  static double *tab;
  static int len;
  if (len != n) {
    free(tab);
    tab = malloc((size_t)n * sizeof *tab);
    if (!tab) die("malloc");
    for (int i = 0; i < n; i++) tab[i] = 0.5 - 0.5 * cos(2 * M_PI * i / (n - 1));
    len = n;
  }
  return tab;
}

static double tone_level(const short *pcm, int n, double hz) {
  double w = 2 * M_PI * hz / RATE, coeff = 2 * cos(w), s1 = 0, s2 = 0;
  const double *win = hann(n);
  for (int i = 0; i < n; i++) {
    double s0 = pcm[i * CHANNELS] / 32768.0 * win[i] + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  double power = s1 * s1 + s2 * s2 - coeff * s1 * s2;
  double level = sqrt(power > 0 ? power : 0) * 4 / n;
  return level < 1 ? level : 1;
}

static double rms(const short *pcm, int n) {
  double sum = 0;
  for (int i = 0; i < n; i++) sum += (pcm[i * CHANNELS] / 32768.0) * (pcm[i * CHANNELS] / 32768.0);
  return n ? sqrt(sum / n) : 0;
}

static long gcd(long a, long b) {
  return b ? gcd(b, a % b) : a;
}

static int tone(double hz, double seconds) {
  int fd = pcm_open(0);
  short buf[PERIOD * CHANNELS];
  long total = (long)(seconds * RATE), done = 0;
  /* One whole cycle of samples, computed before the first is written (sin() is slow under
   * TCG): RATE / gcd(RATE, hz) frames for a whole hz, else one second (a click each second). */
  long cycle = hz == floor(hz) ? RATE / gcd(RATE, (long)hz) : RATE;
  short *wave = malloc((size_t)cycle * sizeof *wave);
  if (!wave) die("malloc");
  for (long i = 0; i < cycle; i++) wave[i] = (short)lrint(0.5 * 32767 * sin(2 * M_PI * hz * i / RATE));
  say("tone start %g\n", hz);
  while (done < total) {
    int n = total - done < PERIOD ? (int)(total - done) : PERIOD;
    for (int i = 0; i < n; i++) {
      short v = wave[(done + i) % cycle];
      for (int c = 0; c < CHANNELS; c++) buf[i * CHANNELS + c] = v;
    }
    transfer(fd, 0, buf, (unsigned long)n);
    done += n;
  }
  ioctl(fd, SNDRV_PCM_IOCTL_DRAIN);
  close(fd);
  free(wave);
  if (xruns) say("tone underruns %ld\n", xruns);
  say("tone end\n");
  return 0;
}

/*
 * A tone is "heard" when its Goertzel level in the last 20 ms is over 0.01 (-40 dBFS, far over
 * the silence of a null sink) and holds most of the window's energy (a sine's level is its
 * amplitude, RMS * sqrt 2): another tone or noise does not count.
 */
/*
 * A capture starts with what QEMU still held from the previous one (about 50 ms here): the
 * first 100 ms are dropped.
 */
static int capture_open(void) {
  int fd = pcm_open(1);
  static short skip[PERIOD * CHANNELS];
  for (int i = 0; i < 10; i++) transfer(fd, 1, skip, PERIOD);
  return fd;
}

static int hear(double hz, double seconds) {
  int fd = capture_open();
  static short win[WINDOW * CHANNELS];
  long total = (long)(seconds * RATE), done = 0;
  while (done < total) {
    memmove(win, win + PERIOD * CHANNELS, (WINDOW - PERIOD) * CHANNELS * sizeof(short));
    transfer(fd, 1, win + (WINDOW - PERIOD) * CHANNELS, PERIOD);
    done += PERIOD;
    if (done < WINDOW) continue;
    if (done == WINDOW) say("hear start %g %.4f\n", hz, rms(win, WINDOW));
    double level = tone_level(win, WINDOW, hz);
    if (level > 0.01 && level > 0.5 * rms(win, WINDOW) * M_SQRT2) {
      say("heard %g\n", hz);
      say("hear end\n");
      close(fd);
      return 0;
    }
  }
  close(fd);
  say("hear none\n");
  return 0;
}

static int listen_(double seconds) {
  int fd = capture_open();
  long frames = (long)(seconds * RATE);
  if (frames < WINDOW) frames = WINDOW;
  short *pcm = malloc((size_t)frames * CHANNELS * sizeof(short));
  if (!pcm) die("malloc");
  transfer(fd, 1, pcm, (unsigned long)frames);
  close(fd);
  /* The dominant frequency of the last second at most (TCG is slow), 100-8000 Hz by 10 Hz. */
  int n = frames > RATE ? RATE : (int)frames;
  const short *tail = pcm + (frames - n) * CHANNELS;
  double level = rms(tail, n), best = 0, best_hz = 0;
  if (level >= 1e-4) {
    for (int f = 100; f <= 8000; f += 10) {
      double l = tone_level(tail, n, f);
      if (l > best) best = l, best_hz = f;
    }
  }
  say("listen %g %.4f\n", best_hz, level);
  return 0;
}

int main(int argc, char **argv) {
  const char *p = getenv("SND_PERIODS");
  if (p && atoi(p) >= 2 && atoi(p) <= 32) periods = atoi(p);
  const char *cmd = argc > 1 ? argv[1] : "";
  double a = argc > 2 ? atof(argv[2]) : 0, b = argc > 3 ? atof(argv[3]) : 0;
  if (!strcmp(cmd, "tone") && a > 0 && a < RATE / 2 && b > 0 && b <= 120) return tone(a, b);
  if (!strcmp(cmd, "hear") && a > 0 && a < RATE / 2 && b > 0 && b <= 120) return hear(a, b);
  if (!strcmp(cmd, "listen") && a > 0 && a <= 120) return listen_(a);
  say("usage: tone [hz] [seconds<=120] | hear <hz> [seconds<=120] | listen [seconds<=120]\n");
  return 2;
}
