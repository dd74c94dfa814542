import { lazy, Suspense, type ReactNode } from 'react';
import { Skeleton, Typography } from 'antd';
import { useTranslation } from 'react-i18next';
import { AudioGroup } from './AudioGroup';
import { ColorModeGroup } from './ColorModeGroup';
import { KeyboardGroup } from './KeyboardGroup';
import { LanguageGroup } from './LanguageGroup';
import { MouseGroup } from './MouseGroup';
import { SecurityGroup } from './SecurityGroup';
import { VideoGroup } from './VideoGroup';

// Device administration (issue 11): loaded when the sidebar opens, each on its own.
const SystemGroup = lazy(() => import('./SystemGroup'));
const NetworkGroup = lazy(() => import('./NetworkGroup'));
const WifiGroup = lazy(() => import('./WifiGroup'));
const EdidGroup = lazy(() => import('./EdidGroup'));
const TimezoneGroup = lazy(() => import('./TimezoneGroup'));

function Lazy({ children }: { children: ReactNode }) {
  return (
    <Suspense fallback={<Skeleton active paragraph={{ rows: 2 }} style={{ padding: 16 }} />}>
      {children}
    </Suspense>
  );
}

/**
 * SPEC 2 settings sidebar, in SPEC 2's order: video, keyboard, mouse, audio, system,
 * security, network with Ethernet, Wi-Fi, device identity (EDID; its USB half is in system),
 * time zone, language, color mode.
 */
export default function SettingsSidebar() {
  const { t } = useTranslation();
  return (
    <div data-testid="settings-sidebar">
      <Typography.Title level={4} style={{ margin: 0, padding: '12px 16px 0' }}>
        {t('settings.title')}
      </Typography.Title>
      <VideoGroup />
      <KeyboardGroup />
      <MouseGroup />
      <AudioGroup />
      <Lazy>
        <SystemGroup />
      </Lazy>
      <SecurityGroup />
      <Lazy>
        <NetworkGroup />
      </Lazy>
      <Lazy>
        <WifiGroup />
      </Lazy>
      <Lazy>
        <EdidGroup />
      </Lazy>
      <Lazy>
        <TimezoneGroup />
      </Lazy>
      <LanguageGroup />
      <ColorModeGroup />
    </div>
  );
}
