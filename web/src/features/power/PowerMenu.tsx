import { useState } from 'react';
import { Button, Dropdown, Tooltip, theme, type MenuProps } from 'antd';
import { LoadingOutlined, PoweroffOutlined } from '@ant-design/icons';
import { useTranslation } from 'react-i18next';
import type { AtxButtonName } from '@kvm/protocol/atx';
import { ATX_BUTTON_TEXT, ATX_ORDER, useAtxControl } from './use-atx-control';

/**
 * SPEC 2/3 ATX power control in the toolbar: power (short), hard power off (long), reset, each
 * after a confirmation (useAtxControl, shared with the external devices' ATX group). The icon
 * carries the power LED; a press in progress anywhere (the state's busy) shows as a spinner and
 * disables the buttons.
 */
export function PowerMenu() {
  const { t } = useTranslation();
  const { token } = theme.useToken();
  const atx = useAtxControl();
  const [menuOpen, setMenuOpen] = useState(false);
  const { enabled, problem, busy, powerOn } = atx;

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
    ...ATX_ORDER.map((button) => ({
      key: button,
      disabled: !atx.canPress,
      label: (
        <span data-testid={ATX_BUTTON_TEXT[button].testId} title={t(ATX_BUTTON_TEXT[button].hint)}>
          {t(ATX_BUTTON_TEXT[button].label)}
        </span>
      ),
    })),
  ];

  const onClick: MenuProps['onClick'] = ({ key }) => {
    if ((ATX_ORDER as readonly string[]).includes(key)) atx.ask(key as AtxButtonName);
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
      {atx.dialog}
    </>
  );
}
