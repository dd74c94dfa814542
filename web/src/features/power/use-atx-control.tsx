import { useEffect, useState, type ReactNode } from 'react';
import { useTranslation } from 'react-i18next';
import type { AtxButtonName, AtxState } from '@kvm/protocol/atx';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { ApiError } from '../../lib/api';
import { clickAtx, loadAtx, useAtx } from './atx-store';

export interface AtxButtonText {
  /** The toolbar menu item's test id. */
  testId: string;
  label: I18nKey;
  hint: I18nKey;
  confirm: I18nKey;
  failed: I18nKey;
}

export const ATX_BUTTON_TEXT: Record<AtxButtonName, AtxButtonText> = {
  power: {
    testId: 'power-short',
    label: 'power.short',
    hint: 'power.shortHint',
    confirm: 'power.confirmShort',
    failed: 'power.failed',
  },
  power_long: {
    testId: 'power-long',
    label: 'power.long',
    hint: 'power.longHint',
    confirm: 'power.confirmLong',
    failed: 'power.failed',
  },
  reset: {
    testId: 'power-reset',
    label: 'power.reset',
    hint: 'power.resetHint',
    confirm: 'power.confirmReset',
    failed: 'power.rebootFailed',
  },
};

export const ATX_ORDER: readonly AtxButtonName[] = ['power', 'power_long', 'reset'];

export interface AtxControl {
  /** null until the first state arrives. */
  state: AtxState | null;
  /** False when the device has no ATX board. */
  enabled: boolean;
  /** Over GPIO: why the buttons cannot act now (a line held elsewhere, the chip missing). */
  problem: string | null;
  /** A press in progress anywhere (the state's busy) or from this console. */
  busy: boolean;
  powerOn: boolean;
  hddOn: boolean;
  /** The buttons may be pressed now. */
  canPress: boolean;
  /** Asks to confirm the press; the press follows the confirmation. */
  ask: (button: AtxButtonName) => void;
  /** The confirmation dialog, to be drawn by the component that uses the control. */
  dialog: ReactNode;
}

/**
 * SPEC 2/3 ATX power control, one per place that offers it (the toolbar's power menu, the
 * external devices' ATX group): the state from the `atx` store (read once if the event socket
 * has not said yet), and each press after its confirmation with the same toasts.
 */
export function useAtxControl(): AtxControl {
  const { t } = useTranslation();
  const message = useMessage();
  const state = useAtx((s) => s.state);
  const pressing = useAtx((s) => s.pressing);
  const [confirming, setConfirming] = useState<AtxButtonName | null>(null);

  useEffect(() => {
    // The event socket's first burst may have come before this module was loaded.
    if (useAtx.getState().state === null) void loadAtx();
  }, []);

  const enabled = state?.enabled !== false;
  const problem = state?.problem ?? null;
  const busy = pressing !== null || state?.busy === true;

  const press = async (button: AtxButtonName) => {
    try {
      await clickAtx(button);
      void message.success(t('power.done'));
    } catch (err) {
      const detail = err instanceof ApiError && err.error_msg ? `: ${err.error_msg}` : '';
      void message.error(`${t(ATX_BUTTON_TEXT[button].failed)}${detail}`);
    } finally {
      setConfirming(null);
    }
  };

  const dialog = (
    <ConfirmDialog
      open={confirming !== null}
      okText={confirming ? t(ATX_BUTTON_TEXT[confirming].label) : undefined}
      onConfirm={() => (confirming ? press(confirming) : undefined)}
      onCancel={() => setConfirming(null)}
    >
      {confirming ? t(ATX_BUTTON_TEXT[confirming].confirm) : null}
    </ConfirmDialog>
  );

  return {
    state,
    enabled,
    problem,
    busy,
    powerOn: state?.leds?.power === true,
    hddOn: state?.leds?.hdd === true,
    canPress: enabled && !busy && problem === null,
    ask: setConfirming,
    dialog,
  };
}
