import { createContext, use, type ReactNode } from 'react';
import { message } from 'antd';
import type { MessageInstance } from 'antd/es/message/interface';

const MessageContext = createContext<MessageInstance | null>(null);

/**
 * Toasts (antd message) that follow the ConfigProvider theme. Used instead of antd's <App>,
 * whose modal and notification parts would weigh on the login route.
 */
export function NotifyProvider({ children }: { children: ReactNode }) {
  const [api, holder] = message.useMessage();
  return (
    <MessageContext value={api}>
      {holder}
      {children}
    </MessageContext>
  );
}

export function useMessage(): MessageInstance {
  const api = use(MessageContext);
  if (!api) throw new Error('useMessage outside NotifyProvider');
  return api;
}
