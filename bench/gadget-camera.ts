/**
 * The gadget bench's camera figures (issue 24; docs/hardware.md "Camera over USB (UVC)"), called
 * by bench/gadget.ts with its booted device VM and admin token:
 * - uvc_first_frame_ms: the page's camera turned on → the remote computer's webcam shows a frame
 *   of it. Not measurable in the device VM, and null with a note: the VM forwards TCP only, so no
 *   WebRTC session (UDP) reaches the server inside to carry the camera, and the kernel's
 *   dummy_hcd has no isochronous endpoints for the webcam (the server leaves it out; the camera
 *   state says `uvc_unavailable`).
 * - uvc_host_first_frame_ms: only where the webcam is there (KVM_DEVICE_VM_ISO=1): the host
 *   side's ffmpeg opening the webcam → its first whole frame (uvc-stream's first, black, before
 *   any camera), on the VM's clock; null otherwise.
 */
import type { DeviceVm } from '../e2e/fixtures/device-vm';
import { note, round } from './lib';

export async function cameraFigures(vm: DeviceVm): Promise<Record<string, number | null>> {
  note('gadget: uvc_first_frame_ms needs WebRTC into the VM (UDP is not forwarded): null');
  const out: Record<string, number | null> = {
    uvc_first_frame_ms: null,
    uvc_host_first_frame_ms: null,
  };
  const { webcams } = (await vm.command('webcams')) as unknown as { webcams: unknown[] };
  if (webcams.length === 0) {
    note('gadget: no USB webcam in this VM (the kernel dummy_hcd has no iso endpoints)');
    return out;
  }
  try {
    const cap = (await vm.command('webcam-capture', { frames: 3, timeoutMs: 60_000 }, 90_000)) as {
      firstFrameMs?: number | null;
    };
    out['uvc_host_first_frame_ms'] =
      typeof cap.firstFrameMs === 'number' ? round(cap.firstFrameMs, 1) : null;
  } catch (err) {
    note(`gadget: the host side's webcam gave no frame: ${(err as Error).message}`);
  }
  return out;
}
