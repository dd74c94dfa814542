// Types of qemu.mjs for the TypeScript e2e harness (e2e/fixtures/device-vm.ts).
export declare const MEMORY_MB: number;
export declare const DATA_IMAGE_MB: number;
export declare function qemuArgs(o: {
  dir: string;
  dataImage: string;
  port: number;
  consoleLog: string;
  observerSocket: string;
  target?: string;
  memoryMb?: number;
  webrtcPorts?: readonly [number, number] | null;
}): string[];
export declare const WEBRTC_PORTS: number;
export declare function freeUdpRange(count?: number, from?: number): Promise<[number, number]>;
export declare function mkfsArgs(path: string, mb?: number): string[];
