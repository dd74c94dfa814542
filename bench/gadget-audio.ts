/**
 * The gadget bench's sound figure (issue 24; docs/hardware.md "Sound over USB (UAC2)"), called by
 * bench/gadget.ts with its booted device VM:
 * - usb_audio_latency_ms: a tone started on the host side's USB sound card (the remote
 *   computer's, ffmpeg writing to snd-usb-audio) → the first 20 ms window with that tone in a
 *   recording of the board's side (`hw:UAC2Gadget,0`, what the server's ALSA driver reads), both
 *   on the VM's clock (the observer's `host-tone` and `host-record`). It is the USB leg only
 *   (player, host driver, dummy_hcd, UAC2 gadget, the board's ALSA buffer), not the page: the
 *   VM forwards no UDP, so no WebRTC session reaches the server inside. The recording's start is
 *   taken when arecord is spawned, before it really records: the figure can be low by
 *   arecord's start-up. Null (with a note) when the VM has the kernel's dummy_hcd, which has no
 *   isochronous endpoints: the server leaves the sound card out (KVM_DEVICE_VM_ISO=1 builds ours).
 */
import type { DeviceVm } from '../e2e/fixtures/device-vm';
import { note, round } from './lib';

const HZ = 1000;

export async function audioFigures(vm: DeviceVm): Promise<Record<string, number | null>> {
  const { cards } = (await vm.command('sound-cards')) as unknown as {
    cards: Array<{ id: string | null; usb: string | null }>;
  };
  if (!cards.some((c) => c.id === 'UAC2Gadget') || !cards.some((c) => c.usb !== null)) {
    note('gadget: no USB sound card in this VM (the kernel dummy_hcd has no iso endpoints)');
    return { usb_audio_latency_ms: null };
  }
  note('gadget: a host tone to the board side of the USB sound card');
  const recording = vm.command(
    'host-record',
    { ms: 4000, hz: HZ, device: 'hw:UAC2Gadget,0' },
    120_000,
  ) as unknown as Promise<{ heardT: number | null }>;
  await new Promise((r) => setTimeout(r, 1000));
  const tone = (await vm.command('host-tone', { hz: HZ, ms: 6000 })) as unknown as { t: number };
  try {
    const heard = await recording;
    return {
      usb_audio_latency_ms: heard.heardT === null ? null : round(heard.heardT - tone.t, 1),
    };
  } finally {
    await vm.command('host-tone-stop');
  }
}
