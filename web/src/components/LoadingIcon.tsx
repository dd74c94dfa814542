import { LoadingOutlined } from '@ant-design/icons';
import { theme } from 'antd';
import { LOADING_ICON_DEFAULT_SIZE, LOADING_ICON_LARGE_FROM } from '@kvm/protocol/constants';

export type LoadingIconVariant = 'large' | 'small';

/** SPEC 9: the large version from a size of 48 px, the small one below. */
export function loadingIconVariant(size: number): LoadingIconVariant {
  return size >= LOADING_ICON_LARGE_FROM ? 'large' : 'small';
}

/**
 * SPEC 9 loading icon, `size` px square (default 140). The large version is a track ring with
 * a turning arc whose stroke grows with the size, for full-page waits; the small one is the
 * plain spinning glyph that fits inline (a 2 px ring would blur at 24 px).
 */
export function LoadingIcon({
  size = LOADING_ICON_DEFAULT_SIZE,
  testId,
}: {
  size?: number;
  testId?: string;
}) {
  const { token } = theme.useToken();
  const variant = loadingIconVariant(size);
  const common = {
    role: 'progressbar' as const,
    'aria-busy': true,
    'data-testid': testId,
    'data-variant': variant,
    'data-size': size,
  };
  if (variant === 'small') {
    return (
      <span {...common} style={{ display: 'inline-flex', width: size, height: size }}>
        <LoadingOutlined style={{ fontSize: size, color: token.colorPrimary }} spin />
      </span>
    );
  }
  const stroke = Math.max(3, Math.round(size / 14));
  const r = (size - stroke) / 2;
  const c = 2 * Math.PI * r;
  return (
    <span {...common} style={{ display: 'inline-flex', width: size, height: size }}>
      <svg width={size} height={size} viewBox={`0 0 ${size} ${size}`} aria-hidden>
        <circle
          cx={size / 2}
          cy={size / 2}
          r={r}
          fill="none"
          stroke={token.colorFillSecondary}
          strokeWidth={stroke}
        />
        <circle
          cx={size / 2}
          cy={size / 2}
          r={r}
          fill="none"
          stroke={token.colorPrimary}
          strokeWidth={stroke}
          strokeLinecap="round"
          strokeDasharray={`${c / 4} ${c}`}
        >
          <animateTransform
            attributeName="transform"
            type="rotate"
            from={`0 ${size / 2} ${size / 2}`}
            to={`360 ${size / 2} ${size / 2}`}
            dur="1s"
            repeatCount="indefinite"
          />
        </circle>
      </svg>
    </span>
  );
}
