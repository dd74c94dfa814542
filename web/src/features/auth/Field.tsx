import type { ReactNode } from 'react';
import { theme } from 'antd';

/**
 * A labelled field with its validation message. The public pages use this instead of antd's
 * Form, which alone would add about 30 KB (gzip) to the login route.
 */
export function Field(props: {
  id: string;
  label: ReactNode;
  error?: string | null;
  children: ReactNode;
}) {
  const { token } = theme.useToken();
  return (
    <div style={{ marginBottom: token.marginLG }}>
      <label htmlFor={props.id} style={{ display: 'block', marginBottom: token.marginXS }}>
        {props.label}
      </label>
      {props.children}
      {props.error && (
        <div
          role="alert"
          style={{ color: token.colorError, fontSize: token.fontSizeSM, marginTop: 4 }}
        >
          {props.error}
        </div>
      )}
    </div>
  );
}
