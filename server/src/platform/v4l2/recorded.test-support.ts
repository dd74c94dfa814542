/**
 * v4l2-ctl outputs recorded from vivid (HDMI input, ccs_cap_mode=0) in the device VM, Debian 12's
 * v4l-utils 1.22 on kernel 6.1 (issue 24), for the parser's and the drivers' tests.
 */

export const QUERY_720P = `\tActive width: 1280
\tActive height: 720
\tTotal width: 1650
\tTotal height: 750
\tFrame format: progressive
\tPolarities: +vsync +hsync
\tPixelclock: 74250000 Hz (60.00 frames per second)
\tHorizontal frontporch: 110
\tHorizontal sync: 40
\tHorizontal backporch: 220
\tVertical frontporch: 5
\tVertical sync: 5
\tVertical backporch: 20
\tStandards: CTA-861
\tCTA-861 VIC: 4
\tFlags: framerate can be reduced by 1/1.001, CE-video, has CTA-861 VIC
`;

export const QUERY_1080P = `\tActive width: 1920
\tActive height: 1080
\tTotal width: 2200
\tTotal height: 1125
\tFrame format: progressive
\tPolarities: +vsync +hsync
\tPixelclock: 148500000 Hz (60.00 frames per second)
\tHorizontal frontporch: 88
\tHorizontal sync: 44
\tHorizontal backporch: 148
\tVertical frontporch: 4
\tVertical sync: 5
\tVertical backporch: 36
\tStandards: CTA-861, DMT
\tCTA-861 VIC: 16
\tFlags: framerate can be reduced by 1/1.001, CE-video, has CTA-861 VIC
`;

/** stdout of a failed query: zeroes (v4l2-ctl prints the struct anyway). */
export const QUERY_ZEROES = `\tActive width: 0
\tActive height: 0
\tTotal width: 0
\tTotal height: 0
\tFrame format: progressive
\tPolarities: -vsync -hsync
\tPixelclock: 0 Hz
\tHorizontal frontporch: 0
\tHorizontal sync: 0
\tHorizontal backporch: 0
\tVertical frontporch: 0
\tVertical sync: 0
\tVertical backporch: 0
\tStandards: 
\tFlags: 
`;

/** stderr of a failed query in vivid's three fault modes; exit status 255. */
export const QUERY_NO_SIGNAL = 'VIDIOC_QUERY_DV_TIMINGS: failed: Link has been severed\n';
export const QUERY_NO_LOCK = 'VIDIOC_QUERY_DV_TIMINGS: failed: No locks available\n';
export const QUERY_OUT_OF_RANGE =
  'VIDIOC_QUERY_DV_TIMINGS: failed: Numerical result out of range\n';
export const SET_BUSY = 'VIDIOC_S_DV_TIMINGS: failed: Device or resource busy\n';
/**
 * vivid refuses an EDID while its capture queue is busy (vidioc_s_edid: vb2_is_busy), as the
 * server in the device VM logged it (bench gadget, 2026-12-03).
 */
export const SET_EDID_BUSY = 'VIDIOC_S_EDID: failed: Device or resource busy\n';
export const GET_EDID_NONE = 'VIDIOC_G_EDID: failed: No data available\n';
/** `-d /dev/video7` that does not exist: exit 1. */
export const NO_DEVICE = 'Cannot open device /dev/video7, exiting.\n';
/** `--set-edid` of a block with a bad checksum: exit 0 (!), nothing set. */
export const SET_EDID_BAD =
  'Block 0 has a checksum error (should be 0x02)\nEDID not set due to checksum errors\n';

export const FMT_720P = `Format Video Capture:
\tWidth/Height      : 1280/720
\tPixel Format      : 'YUYV' (YUYV 4:2:2)
\tField             : None
\tBytes per Line    : 2560
\tSize Image        : 1843200
\tColorspace        : Rec. 709
\tTransfer Function : Default (maps to Rec. 709)
\tYCbCr/HSV Encoding: Default (maps to Rec. 709)
\tQuantization      : Default (maps to Limited Range)
\tFlags             : 
`;

export const FMT_1080P = FMT_720P.replace('1280/720', '1920/1080').replace('2560', '3840');

/** The first lines of `--list-formats` (vivid lists 83). */
export const LIST_FORMATS_VIVID = `ioctl: VIDIOC_ENUM_FMT
\tType: Video Capture

\t[0]: 'YUYV' (YUYV 4:2:2, csc-colorspace, csc-ycbcr, csc-quantization, csc-xfer-func)
\t[1]: 'UYVY' (UYVY 4:2:2, csc-colorspace, csc-ycbcr, csc-quantization, csc-xfer-func)
\t[7]: 'NV12' (Y/UV 4:2:0, csc-colorspace, csc-ycbcr, csc-quantization, csc-xfer-func)
\t[52]: 'RGB3' (24-bit RGB 8-8-8, csc-colorspace, csc-quantization, csc-xfer-func)
`;

/**
 * A USB HDMI dongle's \`--list-formats-ext\` (the common MS2109 kind: MJPEG up to 1920x1080 at
 * 30 fps, YUYV 1920x1080 at 5 fps), in v4l2-ctl's layout.
 */
export const LIST_FORMATS_DONGLE = `ioctl: VIDIOC_ENUM_FMT
\tType: Video Capture

\t[0]: 'MJPG' (Motion-JPEG, compressed)
\t\tSize: Discrete 1920x1080
\t\t\tInterval: Discrete 0.033s (30.000 fps)
\t\tSize: Discrete 1280x720
\t\t\tInterval: Discrete 0.017s (60.000 fps)
\t\t\tInterval: Discrete 0.033s (30.000 fps)
\t\tSize: Discrete 640x480
\t\t\tInterval: Discrete 0.017s (60.000 fps)
\t[1]: 'YUYV' (YUYV 4:2:2)
\t\tSize: Discrete 1920x1080
\t\t\tInterval: Discrete 0.200s (5.000 fps)
\t\tSize: Discrete 1280x720
\t\t\tInterval: Discrete 0.100s (10.000 fps)
\t\tSize: Discrete 640x480
\t\t\tInterval: Discrete 0.033s (30.000 fps)
`;

export const QUERY_DONGLE = 'VIDIOC_QUERY_DV_TIMINGS: failed: Inappropriate ioctl for device\n';

/** vivid's own EDID as \`--get-edid=format=hex\` prints it (256 bytes). */
export const VIVID_EDID_HEX = `00 ff ff ff ff ff ff 00 31 d8 34 12 00 00 00 00
22 1a 01 03 80 60 36 78 0f ee 91 a3 54 4c 99 26
0f 50 54 2f cf 00 31 59 45 59 81 80 81 40 90 40
95 00 a9 40 b3 00 08 e8 00 30 f2 70 5a 80 b0 58
8a 00 c0 1c 32 00 00 1e 00 00 00 fd 00 18 55 18
87 3c 00 0a 20 20 20 20 20 20 00 00 00 fc 00 76
69 76 69 64 0a 20 20 20 20 20 20 20 00 00 00 10
00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 7b

02 03 3f f1 51 61 60 5f 5e 5d 10 1f 04 13 22 21
20 05 14 02 11 01 23 09 07 07 83 01 00 00 6d 03
0c 00 00 00 00 3c 21 00 60 01 02 03 67 d8 5d c4
01 78 00 00 e2 00 ca e3 05 00 00 e3 06 01 00 4d
d0 00 a0 f0 70 3e 80 30 20 35 00 c0 1c 32 00 00
1e 1a 36 80 a0 70 38 1f 40 30 20 35 00 c0 1c 32
00 00 1a 1a 1d 00 80 51 d0 1c 20 40 80 35 00 c0
1c 32 00 00 1c 00 00 00 00 00 00 00 00 00 00 92
`;

export const EVENT_LINE = '238.598331: event 0, pending 0: source_change: pad/input=0 changes: 1\n';
