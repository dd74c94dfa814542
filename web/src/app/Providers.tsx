import { useEffect, useState, type ReactNode } from 'react';
import { ConfigProvider, theme } from 'antd';
import type { Locale } from 'antd/es/locale';
import enUS from 'antd/es/locale/en_US';
import type { Language } from '@kvm/protocol/enums';
import { useFullscreen } from '../components/hooks';
import { usePrefersReducedMotion } from '../components/reduced-motion';
import { NotifyProvider } from '../components/notify';
import { usePreferences } from '../features/preferences/preferences-store';

/**
 * antd's own texts (modal buttons, empty states): English ships with antd, Chinese loads on
 * demand. Always a locale object: antd's ConfigProvider wraps its children in a LocaleProvider
 * only when `locale` is set, so switching from undefined would remount the whole app.
 */
function useAntdLocale(language: Language): Locale {
  const [zh, setZh] = useState<Locale | undefined>(undefined);
  useEffect(() => {
    if (language !== 'zh' || zh) return;
    let live = true;
    void import('antd/es/locale/zh_CN').then((mod) => {
      if (live) setZh(mod.default);
    });
    return () => {
      live = false;
    };
  }, [language, zh]);
  return language === 'zh' && zh ? zh : enUS;
}

/** Page background and text colour follow the antd theme. */
function BodyTheme({ dark }: { dark: boolean }) {
  const { token } = theme.useToken();
  useEffect(() => {
    const { style } = document.body;
    style.margin = '0';
    style.background = token.colorBgLayout;
    style.color = token.colorText;
    style.fontFamily = token.fontFamily;
    document.documentElement.style.colorScheme = dark ? 'dark' : 'light';
  }, [dark, token.colorBgLayout, token.colorText, token.fontFamily]);
  return null;
}

export function AppProviders({ children }: { children: ReactNode }) {
  const themeMode = usePreferences((s) => s.themeMode);
  const language = usePreferences((s) => s.language);
  const fullscreen = useFullscreen();
  // SPEC 2: the dark theme is forced in fullscreen.
  const dark = themeMode === 1 || fullscreen;
  const locale = useAntdLocale(language);
  const reducedMotion = usePrefersReducedMotion();
  return (
    <ConfigProvider
      locale={locale}
      theme={{
        algorithm: dark ? theme.darkAlgorithm : theme.defaultAlgorithm,
        // The system's "reduce motion": dialogs, menus and toasts appear without animating.
        token: { motion: !reducedMotion },
      }}
    >
      <BodyTheme dark={dark} />
      <NotifyProvider>{children}</NotifyProvider>
    </ConfigProvider>
  );
}
