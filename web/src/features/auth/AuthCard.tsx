import type { ReactNode } from 'react';
import { theme } from 'antd';

/** The centred card of the public pages (login, init, two-factor). */
export function AuthCard({
  title,
  description,
  children,
}: {
  title: ReactNode;
  description?: ReactNode;
  children: ReactNode;
}) {
  const { token } = theme.useToken();
  return (
    <div
      style={{
        minHeight: '100%',
        display: 'flex',
        alignItems: 'center',
        justifyContent: 'center',
        padding: 16,
      }}
    >
      <div
        style={{
          width: '100%',
          maxWidth: 380,
          padding: token.paddingLG,
          background: token.colorBgContainer,
          border: `1px solid ${token.colorBorderSecondary}`,
          borderRadius: token.borderRadiusLG,
          boxShadow: token.boxShadowTertiary,
        }}
      >
        <h1 style={{ fontSize: token.fontSizeHeading3, margin: `0 0 ${token.marginMD}px` }}>
          {title}
        </h1>
        {description && (
          <p style={{ color: token.colorTextSecondary, marginTop: 0 }}>{description}</p>
        )}
        {children}
      </div>
    </div>
  );
}
