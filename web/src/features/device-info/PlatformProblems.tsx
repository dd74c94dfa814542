import { useState } from 'react';
import { Alert } from 'antd';
import { useTranslation } from 'react-i18next';
import { useInfo } from './info-store';

const NONE: readonly string[] = [];

/**
 * What keeps the device's own hardware from working (`/api/info` system.platform.problems: a
 * board without a USB device controller, configfs not mounted, a kernel module missing), above
 * the remote screen until the admin closes it. The sentences are the server's own: they name
 * paths and modules, which are the same in every language. A new list shows again.
 */
export function PlatformProblems() {
  const { t } = useTranslation();
  const problems = useInfo((s) => s.system?.platform?.problems) ?? NONE;
  const [closed, setClosed] = useState<string | null>(null);
  const key = problems.join('\n');
  if (problems.length === 0 || closed === key) return null;
  return (
    <Alert
      type="warning"
      showIcon
      banner
      closable
      onClose={() => setClosed(key)}
      data-testid="platform-problems"
      message={t('status.platformProblems')}
      description={
        <ul style={{ margin: 0, paddingInlineStart: 18 }}>
          {problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      }
    />
  );
}
