import { afterEach, describe, expect, it, vi } from 'vitest';
import { EDID_PRESETS } from '@kvm/protocol/edid/presets';
import { deviceIdentityPreset } from '@kvm/protocol/identity';
import type { SystemParams } from '@kvm/protocol/system';
import en from '../../i18n/en.json';
import zh from '../../i18n/zh.json';
import { i18n } from '../../i18n';
import { envelope, stubFetch, type RecordedRequest } from '../../test/fetch-stub';
import { flush, type Rendered, renderPanel } from '../../test/render';
import { chooseOption, click, typeInto } from '../system/test-utils';
import SystemGroup from './SystemGroup';

const PARAMS: SystemParams = {
  success: true,
  absolute_mouse: true,
  msd_partition: '',
  otg_manufacturer: 'Linux Foundation',
  otg_product: 'Multifunction Composite Gadget',
  otg_vendor_id: '0x1D6B',
  otg_product_id: '0x0104',
  otg_serial: '',
  cdrom_vendor: '',
  flash_vendor: '',
  mic_name: '',
  default_product_id: '0x0104',
  default_vendor_id: '0x1D6B',
  privacy_enable: false,
  privacy_restore: false,
  msd_type: 'disabled',
  enable_mic: false,
  identity_preset: 'default',
  usb_applies: ['otg_serial'],
};

function routes(posts: RecordedRequest[], initial = PARAMS) {
  let params = initial;
  return {
    '/api/system/get_param': () => envelope(200, params),
    '/api/system/set_param': (req: RecordedRequest) => {
      posts.push(req);
      return envelope(200, params);
    },
    '/api/system/set_identity_preset': (req: RecordedRequest) => {
      posts.push(req);
      const preset = deviceIdentityPreset(req.query.get('preset') ?? '')!;
      params = { ...params, ...preset, identity_preset: preset.key };
      return envelope(200, { success: true, preset, params });
    },
    '/api/upgrade/edid_list': () =>
      new Response(JSON.stringify(EDID_PRESETS), {
        headers: { 'Content-Type': 'application/json' },
      }),
    '/api/upgrade/edid': (req: RecordedRequest) => {
      posts.push(req);
      return envelope(200, { status: 'success' });
    },
    '/api/upgrade/get_edid': () =>
      envelope(200, {
        edid: EDID_PRESETS[0]!.content,
        preset: EDID_PRESETS[0]!.key,
        preferred: { width: 1920, height: 1080, hz: 60 },
        applies: 'now',
        pending: false,
      }),
    '/api/upgrade/reboot': (req: RecordedRequest) => {
      posts.push(req);
      return envelope(200, { status: 'Reboot started' });
    },
  };
}

async function renderGroup(): Promise<Rendered> {
  const view = await renderPanel(<SystemGroup />);
  return view;
}

describe('SystemGroup', () => {
  let view: Rendered | undefined;
  afterEach(() => {
    view?.unmount();
    view = undefined;
    vi.unstubAllGlobals();
  });

  it('says once for the group which fields take effect on hardware only', async () => {
    stubFetch(routes([]));
    view = await renderGroup();
    expect((view.byTestId('usb-manufacturer') as HTMLInputElement).value).toBe('Linux Foundation');
    const note = view.byTestId('usb-hardware-only');
    expect(note?.dataset['fields']).toBe(
      'otg_manufacturer,otg_product,otg_vendor_id,otg_product_id',
    );
    expect(note?.textContent).toBe(
      en.settings.system.hardwareOnlyFields.replace(
        '{{fields}}',
        [
          en.settings.system.manufacturer,
          en.settings.system.product,
          en.settings.system.vendorId,
          en.settings.system.productId,
        ].join(', '),
      ),
    );
    // Said once: not repeated under each field.
    const group = view.byTestId('settings-group-system')?.textContent ?? '';
    expect(group.split('hardware only').length - 1).toBe(1);
  });

  it('says it once for the whole group when no field applies here', async () => {
    stubFetch(routes([], { ...PARAMS, usb_applies: [] }));
    view = await renderGroup();
    expect(view.byTestId('usb-hardware-only')?.textContent).toBe(en.settings.system.hardwareOnly);
    const group = view.byTestId('settings-group-system')?.textContent ?? '';
    expect(group.split(en.settings.system.hardwareOnly).length - 1).toBe(1);
  });

  it('refuses a vendor id that is not 16-bit hex and a missing product, then sends set_param', async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(routes(posts));
    view = await renderGroup();
    typeInto(view.byTestId('usb-vendor-id'), '0x12345');
    click(view, 'usb-apply');
    await flush();
    expect(view.byTestId('usb-vendor-id-error')?.textContent).toBe(
      en.settings.system.vendorIdInvalid,
    );
    typeInto(view.byTestId('usb-vendor-id'), '0x046D');
    typeInto(view.byTestId('usb-product'), '');
    click(view, 'usb-apply');
    await flush();
    expect(view.byTestId('usb-product-error')?.textContent).toBe('Product is required');
    expect(posts).toHaveLength(0);

    typeInto(view.byTestId('usb-product'), 'Unifying Receiver');
    typeInto(view.byTestId('usb-serial'), 'CAFEBABE');
    click(view, 'usb-apply');
    await flush();
    expect(posts[0]?.path).toBe('/api/system/set_param');
    expect(Object.fromEntries(posts[0]?.query ?? [])).toEqual({
      otg_manufacturer: 'Linux Foundation',
      otg_product: 'Unifying Receiver',
      otg_vendor_id: '0x046D',
      otg_product_id: '0x0104',
      otg_serial: 'CAFEBABE',
    });
  });

  it("applies a device identity preset, then posts the preset's EDID", async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(routes(posts));
    view = await renderGroup();
    const preset = deviceIdentityPreset('monitor_4k_holtek')!;
    await chooseOption(view, 'identity-preset', preset.label);
    await flush();
    expect(posts[0]?.path).toBe('/api/system/set_identity_preset');
    expect(posts[0]?.query.get('preset')).toBe('monitor_4k_holtek');
    expect(posts[1]?.path).toBe('/api/upgrade/edid');
    const edid = EDID_PRESETS.find((p) => p.key === preset.edid)!;
    expect(new URLSearchParams(posts[1]?.body).get('edid')).toBe(edid.content);
    await vi.waitFor(() =>
      expect(view?.byTestId('identity-preset-field')?.dataset['value']).toBe('monitor_4k_holtek'),
    );
    expect((view.byTestId('usb-vendor-id') as HTMLInputElement).value).toBe(preset.otg_vendor_id);
  });

  it('names the device identity presets in the Chinese console', async () => {
    stubFetch(routes([]));
    await i18n.changeLanguage('zh');
    try {
      view = await renderGroup();
      await chooseOption(view, 'identity-preset', zh.settings.system.presetNames.monitor_4k_holtek);
      const texts = [...document.querySelectorAll<HTMLElement>('.ant-select-item-option')].map(
        (o) => o.textContent ?? '',
      );
      expect(texts).toContain(zh.settings.system.presetNames.monitor_1080p_receiver);
      expect(texts).not.toContain(deviceIdentityPreset('monitor_1080p_receiver')!.label);
    } finally {
      await i18n.changeLanguage('en');
    }
    // en: the protocol's own names
    for (const key of [
      'monitor_1080p_receiver',
      'monitor_2k_cherry',
      'monitor_4k_holtek',
    ] as const) {
      expect(en.settings.system.presetNames[key]).toBe(deviceIdentityPreset(key)!.label);
    }
  });

  it('reboots the device only after the confirm dialog', async () => {
    const posts: RecordedRequest[] = [];
    stubFetch(routes(posts));
    view = await renderGroup();
    click(view, 'system-reboot');
    await flush();
    expect(posts).toEqual([]);
    click(view, 'confirm-ok');
    await vi.waitFor(() => expect(posts.map((p) => p.path)).toEqual(['/api/upgrade/reboot']));
  });
});
