import { useEffect } from 'react';
import { Tabs } from 'antd';
import { useTranslation } from 'react-i18next';
import { terminalTab } from './open-terminal';
import { TerminalView } from './TerminalView';

/**
 * SPEC 2 /webterm: the device's shell and the remote computer's serial console, each in its own
 * tab (xterm.js over ttyd's protocol), opened on the serial one with `?tab=serial`. A lazy chunk of
 * its own: xterm is large.
 */
export default function TerminalPage() {
  const { t } = useTranslation();
  useEffect(() => {
    const before = document.title;
    document.title = t('terminal.title');
    return () => {
      document.title = before;
    };
  }, [t]);
  return (
    <div
      style={{ height: '100vh', display: 'flex', flexDirection: 'column', padding: 8 }}
      className="terminal-page"
    >
      <Tabs
        defaultActiveKey={terminalTab(window.location.search)}
        style={{ flex: 1, minHeight: 0 }}
        className="terminal-tabs"
        items={[
          {
            key: 'device',
            label: t('terminal.device'),
            children: <TerminalView target="device" />,
          },
          {
            key: 'serial',
            label: t('terminal.serial'),
            children: <TerminalView target="serial" />,
          },
        ]}
      />
    </div>
  );
}
