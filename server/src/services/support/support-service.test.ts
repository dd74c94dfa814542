import { describe, expect, it } from 'vitest';
import { SILENT_LOGGER } from '../../log';
import { tempDataDir } from '../../test-helpers';
import type { LogBundle } from './log-bundle';
import { SupportIsBusyError, SupportService } from './support-service';

describe('SupportService: one request at a time through its ExclusiveRegion', () => {
  it('is busy while the bundle is built; a second request is refused with 409', async () => {
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    let builds = 0;
    const bundle = {
      build: async () => {
        builds += 1;
        await held;
        return { name: 'system_logs_20260101_000000.zip', zip: Buffer.from('zip') };
      },
    } as unknown as LogBundle;
    const service = new SupportService({
      dataDir: await tempDataDir(),
      url: null,
      bundle,
      log: SILENT_LOGGER,
    });
    const req = { message: 'The video is black', contact: 'me@example.com', images: [] };
    const first = service.submit(req);
    expect(service.region.busy).toBe(true);
    const second = await service.submit(req).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(SupportIsBusyError);
    expect(second).toMatchObject({ status: 409 });
    expect(builds).toBe(1);
    release();
    expect(await first).toMatchObject({ delivered: 'saved' });
    await expect.poll(() => service.region.busy, { timeout: 5000 }).toBe(false);
  });
});
