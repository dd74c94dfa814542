/**
 * Stream quality and encoder parameters (SPEC 3 presets, SPEC 4 quality change, SPEC 5 custom
 * bitrate / frame rate). POST /api/streamer/set_params applies without dropping viewers; a new
 * key frame follows. A quality change then waits, up to 10 polls of 300 ms, for the stream to be
 * back online.
 */
import { STORAGE_KEYS } from '@kvm/protocol/constants';
import { isEdid4k } from '@kvm/protocol/edid/edid';
import { qualityPresetParams } from '@kvm/protocol/edid/presets';
import { STREAM_QUALITIES, type StreamQuality } from '@kvm/protocol/enums';
import type { StreamerParams, StreamerState } from '@kvm/protocol/streamer';
import type { EdidState } from '@kvm/protocol/system';
import { parseFiniteNumber } from '@kvm/protocol/validation';
import { api } from '../../lib/api';
import { writeStorage } from '../../lib/storage';
import { saveConfig, useConfig } from '../config/config-store';
import { applyStreamer, useStreamer } from './streamer-store';

/** SPEC 4: up to about 10 polls, 300 ms apart. */
export const QUALITY_POLL_MS = 300;
export const QUALITY_POLL_COUNT = 10;

/** SPEC 3: the gop is halved while the 4K EDID is active (the device's, last read). */
let fourKEdid = false;
export const is4kEdidActive = (): boolean => fourKEdid;

/** Reads the EDID in force (GET /api/upgrade/get_edid); on failure the last answer stays. */
export async function refreshEdid4k(): Promise<boolean> {
  try {
    const state = await api.get<EdidState>('/upgrade/get_edid', { timeoutMs: 3000 });
    fourKEdid = isEdid4k(state.preferred);
  } catch {
    // no answer: keep what was known
  }
  return fourKEdid;
}

/**
 * After the EDID in force changed (the EDID group calls it with `get_edid`'s `preferred`): when
 * the 4K rule flips and the stream runs the stored preset, the preset is sent again with its gop
 * halved or restored. Custom bitrate or gop values are left alone.
 */
export async function followEdidGop(preferred: EdidState['preferred']): Promise<void> {
  const was = fourKEdid;
  fourKEdid = isEdid4k(preferred);
  if (was === fourKEdid) return;
  const quality = useConfig.getState().config?.stream_quality;
  if (!quality) return;
  const running = currentEncoderParams();
  const before = qualityParams(quality, was);
  if (running.h264_bitrate !== before.h264_bitrate || running.h264_gop !== before.h264_gop) return;
  await api.post('/streamer/set_params', { query: qualityParams(quality, fourKEdid) });
}

export function resetEdid4kForTests(): void {
  fourKEdid = false;
}

export function qualityParams(
  quality: StreamQuality,
  fourK: boolean = is4kEdidActive(),
): Pick<StreamerParams, 'h264_bitrate' | 'h264_gop'> {
  return qualityPresetParams(STREAM_QUALITIES.indexOf(quality), fourK);
}

/**
 * SPEC 5: a custom video bitrate or frame rate must be a non-negative number (a finite one,
 * the generic numeric check). Returns the number, or null when the text is not one.
 */
export function parseNonNegativeNumber(text: string): number | null {
  const value = parseFiniteNumber(text);
  return value !== null && value >= 0 ? value : null;
}

/** The bitrate and gop running now: the streamer's, else the preset of the stored quality. */
export function currentEncoderParams(): Pick<StreamerParams, 'h264_bitrate' | 'h264_gop'> {
  const params = useStreamer.getState().state?.params;
  if (params && typeof params.h264_bitrate === 'number' && typeof params.h264_gop === 'number') {
    return { h264_bitrate: params.h264_bitrate, h264_gop: params.h264_gop };
  }
  return qualityParams(useConfig.getState().config?.stream_quality ?? 'MEDIUM');
}

/** POST /api/streamer/set_params; h264_bitrate and h264_gop always go along. */
export async function setStreamerParams(params: Partial<StreamerParams>): Promise<void> {
  await api.post('/streamer/set_params', { query: { ...currentEncoderParams(), ...params } });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function streamOnline(state: StreamerState | null | undefined): boolean {
  return state?.streamer?.source?.online === true && state.streamer.h264?.online === true;
}

/**
 * SPEC 4: polls GET /api/streamer up to 10 times, 300 ms apart, until the source and the
 * encoder are online again; true when they came back, false when the polls ran out.
 */
export async function waitForStreamOnline(
  options: { polls?: number; intervalMs?: number } = {},
): Promise<boolean> {
  const polls = options.polls ?? QUALITY_POLL_COUNT;
  const intervalMs = options.intervalMs ?? QUALITY_POLL_MS;
  for (let i = 0; i < polls; i += 1) {
    await sleep(intervalMs);
    try {
      const state = await api.get<StreamerState>('/streamer', { timeoutMs: intervalMs * 3 });
      applyStreamer(state);
      if (streamOnline(state)) return true;
    } catch {
      // No answer this time: the next poll tries again.
    }
  }
  return false;
}

/**
 * SPEC 4 quality change: set the preset's bitrate and gop, store the level (server config and
 * local storage), then wait for the stream to be back. Resolves to whether it came back; rejects
 * when set_params or the config write failed (the caller toasts).
 */
export async function changeStreamQuality(quality: StreamQuality): Promise<boolean> {
  await api.post('/streamer/set_params', { query: qualityParams(quality, await refreshEdid4k()) });
  writeStorage(STORAGE_KEYS.streamQuality, quality);
  const saved = saveConfig({ stream_quality: quality });
  const [online] = await Promise.all([waitForStreamOnline(), saved]);
  return online;
}
