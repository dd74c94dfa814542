// dummy_hcd with isochronous transfers, for the device VM (issue 24, docs/hardware.md "Sound: UAC2
// in the device VM"). Debian's dummy_hcd has no isochronous endpoints (its iso entries are
// commented out, and an iso URB fails with -EINVAL), so a gadget with a UAC2 sound card (or a
// UVC webcam, both isochronous) does not bind to it. This builds the module out of tree from
// Debian's own source of the VM's kernel, with two changes made here at build time:
//   1. the six iso endpoints of its endpoint table are enabled (ep3in/ep4out/ep8in/ep9out/
//      ep13in/ep14out-iso);
//   2. an iso URB is served one packet per interval (urb->interval microframes at high speed,
//      frames at full speed), paced by the monotonic clock (every packet due since the timer
//      last ran is served when it runs: under TCG it runs every few ms, not every 125 us):
//      each packet takes (IN) or gives (OUT)
//      the first request queued on the gadget's endpoint, or is empty when none is queued, as a
//      real bus does; the URB completes when all its packets are done.
// Nothing is copied from the kernel into this repository: the file is taken from the source
// package and changed by the text below (our own code). The module keeps its name (dummy_hcd)
// and its GPL licence; it is only ever loaded in the test VM.
//
// Inputs (Debian packages of the kernel's own version): linux-source-<x.y> (only downloaded),
// linux-headers-<abi> (kbuild's tree). Cached in .cache/dummy-hcd-iso by a hash of the inputs.
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { run } from '../guest/run.mjs';
import { kernelOfDeb } from './gpio-sim.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Whether the VM gets this dummy_hcd (KVM_DEVICE_VM_ISO=1) or the kernel's own (the default).
 * Both directions carry sound with it (docs/hardware.md "Sound over USB"), but the whole
 * device-VM spec has not yet been seen green with it on this loaded machine, so it stays opt-in.
 * With isochronous endpoints the UAC2 and UVC functions bind, and the kernel's UVC gadget keeps
 * the whole gadget disconnected until a program opens its video node (the server's uvc-stream,
 * in the image): nothing enumerates, not even the keyboard, until it runs. With the kernel's
 * dummy_hcd the server leaves UAC2 and UVC out and says so (problems, /api/audio's reason).
 */
export const DUMMY_HCD_ISO = process.env.KVM_DEVICE_VM_ISO === '1';
export const DUMMY_HCD_DIR = join(root, '.cache', 'dummy-hcd-iso');
const SOURCE = 'drivers/usb/gadget/udc/dummy_hcd.c';

const aptOpts = () => (process.getuid?.() === 0 ? ['-o', 'APT::Sandbox::User=root'] : []);

/** The iso endpoint entries, commented out in pairs in the kernel's table. */
const ISO_BLOCK =
  /\/\*\n(\tEP_INFO\("ep\d+in-iso",\n[^\n]*\n\tEP_INFO\("ep\d+out-iso",\n[^\n]*\n)\*\/\n/g;

/** Our isochronous transfer: one packet per interval, paced by the clock. */
const ISO_TRANSFER = `
/* device VM (kvm issue 24): isochronous transfers, one packet per interval, paced by the clock */
static int dummy_iso_transfer(struct dummy_hcd *dum_hcd, struct urbp *urbp,
		struct dummy_ep *ep)
{
	struct dummy *dum = dum_hcd->dum;
	struct urb *urb = urbp->urb;
	u64 now = ktime_get_ns();
	u64 period = (u64)max(urb->interval, 1) *
		(dum->gadget.speed >= USB_SPEED_HIGH ? 125000 : 1000000);
	int to_host = usb_urb_dir_in(urb);

	if (urb->num_sgs || !urb->transfer_buffer)
		return -EINVAL;
	/*
	 * The timer fires every 125 us on hardware but every few ms under an emulator (TCG): the
	 * packets due since the last run are all served now. A stream that starts again (the
	 * last packet over 100 ms ago) starts from now, with no burst.
	 */
	if (!ep->iso_due || now > ep->iso_due + 100000000ULL || ep->iso_due > now + 8 * period)
		ep->iso_due = now;
	while (urbp->iso_next < urb->number_of_packets && ep->iso_due <= now) {
		struct usb_iso_packet_descriptor *d = &urb->iso_frame_desc[urbp->iso_next++];
		struct dummy_request *req;
		unsigned int len;

		ep->iso_due += period;
		d->status = 0;
		d->actual_length = to_host ? 0 : d->length;
		if (list_empty(&ep->queue))
			continue;
		req = list_first_entry(&ep->queue, struct dummy_request, queue);
		len = min_t(unsigned int, d->length, req->req.length - req->req.actual);
		if (to_host)
			memcpy(urb->transfer_buffer + d->offset, req->req.buf + req->req.actual, len);
		else
			memcpy(req->req.buf + req->req.actual, urb->transfer_buffer + d->offset, len);
		req->req.actual += len;
		if (to_host)
			d->actual_length = len;
		urb->actual_length += d->actual_length;
		req->req.status = 0;
		list_del_init(&req->queue);
		dummy_giveback(dum, &ep->ep, req);
	}
	ep->last_io = jiffies;
	if (urbp->iso_next < urb->number_of_packets)
		return -EINPROGRESS;
	urb->error_count = 0;
	return 0;
}
`;

/** One exact replacement; throws unless `from` is there exactly once. */
function once(text, from, to, what) {
  const n = text.split(from).length - 1;
  if (n !== 1) throw new Error(`dummy-hcd-iso: ${what}: found ${n} times in dummy_hcd.c`);
  return text.replace(from, to);
}

/** dummy_hcd.c with iso endpoints and transfers (pure; throws when the source differs). */
export function patchDummyHcd(text) {
  const blocks = text.match(ISO_BLOCK) ?? [];
  if (blocks.length !== 3)
    throw new Error(`dummy-hcd-iso: ${blocks.length} iso endpoint blocks, not 3`);
  let out = text.replace(ISO_BLOCK, '$1');
  out = once(
    out,
    '\tunsigned\t\t\tstream_en:1;\n};',
    '\tunsigned\t\t\tstream_en:1;\n\tu64\t\t\t\tiso_due;\t/* ns: the next iso packet */\n};',
    'struct dummy_ep',
  );
  out = once(
    out,
    '\tu32\t\t\tmiter_started;\n};',
    '\tu32\t\t\tmiter_started;\n\tint\t\t\tiso_next;\t/* iso packets done */\n};',
    'struct urbp',
  );
  out = once(
    out,
    '\turbp->miter_started = 0;\n',
    '\turbp->miter_started = 0;\n\turbp->iso_next = 0;\n',
    'urb_enqueue',
  );
  out = once(
    out,
    '\t\t\tlimit = max(limit, periodic_bytes(dum, ep));\n\t\t\tstatus = -EINVAL;\t/* fail all xfers */\n',
    '\t\t\tstatus = dummy_iso_transfer(dum_hcd, urbp, ep);\n',
    'the iso case of dummy_timer',
  );
  out = once(
    out,
    '\nstatic enum hrtimer_restart dummy_timer(',
    `${ISO_TRANSFER}\nstatic enum hrtimer_restart dummy_timer(`,
    'dummy_timer',
  );
  return out;
}

/** dummy_hcd.c of this kernel version, unpacked once. */
function source(kernel, log) {
  const dir = join(DUMMY_HCD_DIR, `src-${kernel.version}`);
  const file = join(dir, basename(SOURCE));
  if (existsSync(file)) return file;
  const pkg = `linux-source-${kernel.series}`;
  const debs = join(DUMMY_HCD_DIR, 'debs');
  rmSync(debs, { recursive: true, force: true });
  mkdirSync(debs, { recursive: true });
  log(`apt-get download ${pkg}=${kernel.version}`);
  run('apt-get', ['download', '-qq', ...aptOpts(), `${pkg}=${kernel.version}`], { cwd: debs });
  const deb = join(debs, `${pkg}_${kernel.version.replace(/:/g, '%3a')}_all.deb`);
  if (!existsSync(deb)) throw new Error(`dummy-hcd-iso: apt-get download left no ${basename(deb)}`);
  const tmp = `${dir}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const top = `linux-source-${kernel.series}`;
  const q = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
  run('bash', [
    '-o',
    'pipefail',
    '-c',
    `dpkg-deb --fsys-tarfile ${q(deb)} | tar -xO ./usr/src/${top}.tar.xz | ` +
      `tar -xJ -C ${q(tmp)} ${q(`${top}/${SOURCE}`)}`,
  ]);
  renameSync(join(tmp, top, SOURCE), join(tmp, basename(SOURCE)));
  rmSync(join(tmp, top), { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  rmSync(debs, { recursive: true, force: true });
  return file;
}

/** The patched dummy_hcd.ko for the kernel of `kernelDeb`: its path (cached) and hash key. */
export function buildDummyHcdIso(kernelDeb, log = () => {}) {
  const kernel = kernelOfDeb(kernelDeb);
  const src = source(kernel, log);
  const text = readFileSync(src, 'utf8');
  const key = createHash('sha256')
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .update(`${kernel.abi}\0${kernel.version}\0`)
    .update(text)
    .digest('hex')
    .slice(0, 16);
  const out = join(DUMMY_HCD_DIR, `dummy_hcd-${kernel.abi}-${key}.ko`);
  if (existsSync(out)) return { path: out, key };
  const kbuild = `/usr/src/linux-headers-${kernel.abi}`;
  if (!existsSync(join(kbuild, 'Makefile'))) {
    throw new Error(
      `dummy-hcd-iso: ${kbuild} missing: apt-get install linux-headers-${kernel.abi}`,
    );
  }
  const work = join(DUMMY_HCD_DIR, 'work');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  writeFileSync(join(work, 'dummy_hcd.c'), patchDummyHcd(text));
  writeFileSync(join(work, 'Makefile'), 'obj-m += dummy_hcd.o\n');
  log(`building dummy_hcd.ko (isochronous) for ${kernel.abi}`);
  run('make', ['-s', '-C', kbuild, `M=${work}`, 'modules']);
  const info = run('modinfo', ['-F', 'vermagic', join(work, 'dummy_hcd.ko')]);
  if (!info.startsWith(`${kernel.abi} `)) {
    throw new Error(`dummy-hcd-iso: built for ${info.trim()}, not ${kernel.abi}`);
  }
  copyFileSync(join(work, 'dummy_hcd.ko'), `${out}.new`);
  renameSync(`${out}.new`, out);
  rmSync(work, { recursive: true, force: true });
  return { path: out, key };
}
