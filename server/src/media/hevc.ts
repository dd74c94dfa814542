/**
 * H.265/HEVC byte-stream helpers (ITU-T H.265 7.3.1 and Annex B): the 2-byte NAL unit header,
 * the NAL unit types a transport cares about, and the profile/tier/level of an SPS as the
 * WebRTC fmtp line names them (RFC 7798 7.1: profile-id, tier-flag, level-id).
 *
 * Annex B splitting is the same as H.264's (start codes 00 00 01 / 00 00 00 01): annexb.ts's
 * `splitNalUnits` serves both codecs.
 *
 * NAL unit header (H.265 7.3.1.2), 16 bits:
 *   forbidden_zero_bit(1) | nal_unit_type(6) | nuh_layer_id(6) | nuh_temporal_id_plus1(3)
 */

/** nal_unit_type values (H.265 Table 7-1) and the RFC 7798 payload structures. */
export const HevcNalType = {
  /** IRAP pictures are types 16-23 (BLA 16-18, IDR 19-20, CRA 21, reserved 22-23). */
  bla: 16,
  idrWRadl: 19,
  idrNLp: 20,
  cra: 21,
  vps: 32,
  sps: 33,
  pps: 34,
  aud: 35,
  eos: 36,
  eob: 37,
  fd: 38,
  seiPrefix: 39,
  seiSuffix: 40,
  /** RFC 7798 4.4.2 aggregation packet and 4.4.3 fragmentation unit; never in a byte stream. */
  ap: 48,
  fu: 49,
} as const;

/** nal_unit_type: bits 1-6 of the first header byte. */
export function hevcNalType(nal: Uint8Array): number {
  return ((nal[0] ?? 0) >> 1) & 0x3f;
}

/** nuh_layer_id: the last bit of the first byte and the first 5 bits of the second. */
export function hevcLayerId(nal: Uint8Array): number {
  return (((nal[0] ?? 0) & 0x01) << 5) | ((nal[1] ?? 0) >> 3);
}

/** nuh_temporal_id_plus1: the low 3 bits of the second byte (0 is forbidden). */
export function hevcTid(nal: Uint8Array): number {
  return (nal[1] ?? 0) & 0x07;
}

/** An intra random access point (IDR, CRA, BLA): a decoder can start here. */
export function isHevcIrap(nal: Uint8Array): boolean {
  const t = hevcNalType(nal);
  return t >= HevcNalType.bla && t <= 23;
}

/** The profile, tier and level of an SPS as RFC 7798's fmtp parameters take them. */
export interface HevcProfileTierLevel {
  /** general_profile_idc: 1 Main, 2 Main 10, 3 Main Still Picture. */
  profileId: number;
  /** general_tier_flag: 0 Main tier, 1 High tier. */
  tierFlag: number;
  /** general_level_idc: 30 × the level (93 is level 3.1, 120 is level 4). */
  levelId: number;
}

/**
 * Reads the profile/tier/level of an SPS NAL unit (header included), or null when it is too
 * short. seq_parameter_set_rbsp starts (7.3.2.2) with sps_video_parameter_set_id(4),
 * sps_max_sub_layers_minus1(3), sps_temporal_id_nesting_flag(1), then profile_tier_level
 * (7.3.3): general_profile_space(2), general_tier_flag(1), general_profile_idc(5), 32 bits of
 * compatibility flags, 48 bits of constraint flags, general_level_idc(8). The constraint flags
 * are mostly zero, so emulation prevention bytes (00 00 03) are common here: removed first.
 */
export function hevcProfileTierLevel(sps: Uint8Array): HevcProfileTierLevel | null {
  if (hevcNalType(sps) !== HevcNalType.sps) return null;
  const rbsp = unescapeRbsp(sps.subarray(2, 2 + 24));
  if (rbsp.length < 13) return null;
  const ptl = rbsp[1]!;
  return { profileId: ptl & 0x1f, tierFlag: (ptl >> 5) & 1, levelId: rbsp[12]! };
}

/** Removes emulation prevention bytes: 00 00 03 → 00 00 (H.265 7.4.2). */
export function unescapeRbsp(bytes: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(bytes.length);
  let n = 0;
  let zeros = 0;
  for (const b of bytes) {
    if (zeros >= 2 && b === 3) {
      zeros = 0;
      continue;
    }
    zeros = b === 0 ? zeros + 1 : 0;
    out[n++] = b;
  }
  return out.subarray(0, n);
}
