import { useEffect, useState } from 'react';
import { Button, Dropdown, Tooltip, theme, type MenuProps } from 'antd';
import { LoadingOutlined, PoweroffOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { AtxButtonName } from '@kvm/protocol/atx';
import { ConfirmDialog } from '../../components/ConfirmDialog';
import { useMessage } from '../../components/notify';
import type { I18nKey } from '../../i18n/keys';
import { ApiError } from '../../lib/api';
import { clickAtx, loadAtx, useAtx } from './atx-store';

interface ButtonText {
  testId: string;
  label: I18nKey;
  hint: I18nKey;
  confirm: I18nKey;
  failed: I18nKey;
}

const BUTTONS: Record<AtxButtonName, ButtonText> = {
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

const ORDER: readonly AtxButtonName[] = ['power', 'power_long', 'reset'];

/**
 * SPEC 2/3 ATX power control in the toolbar: power (short), hard power off (long), reset, each
 * after a confirmation. The icon carries the power LED; a press in progress anywhere (the
 * state's busy) shows as a spinner and disables the buttons.
 */
export function PowerMenu() {
  const { t } = useTranslation();
  const message = useMessage();
  const { token } = theme.useToken();
  const state = useAtx((s) => s.state);
  const pressing = useAtx((s) => s.pressing);
  const [confirming, setConfirming] = useState<AtxButtonName | null>(null);

  useEffect(() => {
    // The event socket's first burst may have come before this module was loaded.
    if (useAtx.getState().state === null) void loadAtx();
  }, []);

  const [menuOpen, setMenuOpen] = useState(false);
  const enabled = state?.enabled !== false;
  /** Over GPIO: why the buttons cannot act now (a line held elsewhere, the chip missing). */
  const problem = state?.problem ?? null;
  const busy = pressing !== null || state?.busy === true;
  const powerOn = state?.leds?.power === true;

  const press = async (button: AtxButtonName) => {
    try {
      await clickAtx(button);
      void message.success(t('power.done'));
    } catch (err) {
      const detail = err instanceof ApiError && err.error_msg ? `: ${err.error_msg}` : '';
      void message.error(`${t(BUTTONS[button].failed)}${detail}`);
    } finally {
      setConfirming(null);
    }
  };

  const items: MenuProps['items'] = [
    ...(!enabled ? [{ key: 'disabled', disabled: true, label: t('power.disabled') }] : []),
    ...(busy ? [{ key: 'busy', disabled: true, label: t('power.busy') }] : []),
    ...(enabled && problem
      ? [
          {
            key: 'problem',
            disabled: true,
            label: (
              <span data-testid="power-problem">
                {t('power.offline')}: {problem}
              </span>
            ),
          },
        ]
      : []),
    ...ORDER.map((button) => ({
      key: button,
      disabled: !enabled || busy || problem !== null,
      label: (
        <span data-testid={BUTTONS[button].testId} title={t(BUTTONS[button].hint)}>
          {t(BUTTONS[button].label)}
        </span>
      ),
    })),
  ];

  const onClick: MenuProps['onClick'] = ({ key }) => {
    if ((ORDER as readonly string[]).includes(key)) setConfirming(key as AtxButtonName);
  };

  const title = `${t('power.menu')} · ${t(powerOn ? 'power.ledOn' : 'power.ledOff')}`;
  return (
    <>
      <Dropdown
        menu={{ items, onClick }}
        trigger={['click']}
        placement="bottom"
        onOpenChange={setMenuOpen}
      >
        {/* The tooltip would sit over the open menu's first item: hidden while it is open. */}
        <Tooltip title={title} placement="bottom" {...(menuOpen ? { open: false } : {})}>
          <Button
            type="text"
            aria-label={t('power.menu')}
            data-testid="toolbar-power"
            data-busy={busy ? 'true' : 'false'}
            icon={
              <span style={{ position: 'relative', display: 'inline-flex' }}>
                {busy ? <LoadingOutlined /> : <PoweroffOutlined />}
                <span
                  aria-hidden
                  data-testid="power-led"
                  data-on={powerOn ? 'true' : 'false'}
                  style={{
                    position: 'absolute',
                    top: -3,
                    right: -4,
                    width: 6,
                    height: 6,
                    borderRadius: '50%',
                    background: powerOn ? token.colorSuccess : token.colorTextQuaternary,
                  }}
                />
              </span>
            }
          />
        </Tooltip>
      </Dropdown>
      <ConfirmDialog
        open={confirming !== null}
        okText={confirming ? t(BUTTONS[confirming].label) : undefined}
        onConfirm={() => (confirming ? press(confirming) : undefined)}
        onCancel={() => setConfirming(null)}
      >
        {confirming ? t(BUTTONS[confirming].confirm) : null}
      </ConfirmDialog>
    </>
  );
}
