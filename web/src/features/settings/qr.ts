/** QR code of a text as a PNG data URL. The qrcode library is loaded only when needed. */
export async function qrDataUrl(text: string): Promise<string> {
  const mod = await import('qrcode');
  // qrcode is CommonJS: the functions sit on `default` (module.exports) under Vite's interop,
  // on the namespace itself under others.
  const lib = (mod.default as typeof mod.default | undefined) ?? mod;
  return lib.toDataURL(text, { margin: 1, width: 192, errorCorrectionLevel: 'M' });
}
