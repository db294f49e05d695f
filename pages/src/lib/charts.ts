// uPlot charts that follow the container's width and the light/dark colour scheme.
import uPlot from 'uplot';

function colors() {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    text: v('--muted', '#666'),
    grid: v('--grid', 'rgba(128,128,128,.2)'),
    accent: v('--accent', '#3b6cf6'),
    accent2: v('--accent-2', '#e0801b'),
    danger: v('--danger', '#d13b3b'),
  };
}

export type ColorName = 'accent' | 'accent2' | 'danger';

interface Chart { destroy(): void }

/** A chart drawn into `host`, redrawn at the host's width and when the colour scheme changes. */
function mount(host: HTMLElement, height: number, make: (width: number, height: number) => uPlot): Chart {
  let plot: uPlot | null = null;
  const width = () => Math.max(200, Math.floor(host.clientWidth));
  const draw = () => {
    plot?.destroy();
    host.replaceChildren();
    plot = make(width(), height);
  };
  // A host not laid out yet (the page still hidden) has no width: the chart is drawn when it gets
  // one. The observer reports that after layout and before paint, so the first frame shown already
  // holds the chart at its width and nothing moves.
  if (host.clientWidth > 0) draw();
  const ro = new ResizeObserver(() => {
    if (!plot) {
      if (host.clientWidth > 0) draw();
    } else if (Math.abs(plot.width - width()) > 1) plot.setSize({ width: width(), height });
  });
  ro.observe(host);
  const scheme = matchMedia('(prefers-color-scheme: dark)');
  scheme.addEventListener('change', draw);
  return {
    destroy() {
      ro.disconnect();
      scheme.removeEventListener('change', draw);
      plot?.destroy();
      plot = null;
    },
  };
}

// Counts have no fractions: ticks at whole numbers only.
const COUNT_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000, 100_000, 1e6, 1e7];

const axis = (c: ReturnType<typeof colors>, extra: uPlot.Axis = {}): uPlot.Axis => ({
  stroke: c.text,
  grid: { stroke: c.grid, width: 1 },
  ticks: { stroke: c.grid, width: 1 },
  font: '12px system-ui, sans-serif',
  ...extra,
});

/** Vertical bars over categories (labels are drawn on the canvas, so they are never parsed as HTML). */
export function barChart(host: HTMLElement, labels: string[], values: number[], opts: { color?: ColorName; label: string; height?: number }): Chart {
  const xs = labels.map((_, i) => i);
  const max = Math.max(1, ...values);
  const short = (s: string) => (s.length > 14 ? s.slice(0, 13) + '…' : s);
  return mount(host, opts.height ?? 200, (width, height) => {
    const c = colors();
    return new uPlot(
      {
        width,
        height,
        legend: { show: false },
        cursor: { show: true, points: { show: false }, drag: { x: false, y: false } },
        scales: { x: { time: false, range: [-0.5, Math.max(0, labels.length - 0.5)] }, y: { range: [0, max * 1.15] } },
        axes: [
          axis(c, { grid: { show: false }, splits: () => xs, values: (_u, splits) => splits.map((i) => short(labels[i] ?? '')) }),
          axis(c, { size: 44, incrs: COUNT_INCRS }),
        ],
        series: [
          {},
          {
            label: opts.label,
            stroke: c[opts.color ?? 'accent'],
            fill: c[opts.color ?? 'accent'] + 'cc',
            width: 0,
            paths: uPlot.paths.bars!({ size: [0.6, 56], gap: 2 }),
            points: { show: false },
          },
        ],
      },
      [xs, values],
      host,
    );
  });
}

/** Lines over time (x in seconds) or over categories, one y scale per series when asked. */
export function lineChart(
  host: HTMLElement,
  xs: number[],
  series: { label: string; values: (number | null)[]; color: ColorName; scale?: string; bars?: boolean }[],
  opts: { time: boolean; categories?: string[]; height?: number; unit?: string },
): Chart {
  return mount(host, opts.height ?? 200, (width, height) => {
    const c = colors();
    const scales: uPlot.Scales = {
      x: {
        time: opts.time,
        // Samples sent in one burst share a timestamp; give the axis a minute so it stays readable.
        range: opts.categories
          ? [-0.5, opts.categories.length - 0.5]
          : (_u, min, max) => (max - min < 60 ? [min - 30, max + 30] : [min, max]),
      },
    };
    const axes: uPlot.Axis[] = [
      axis(c, opts.categories ? { grid: { show: false }, splits: () => xs, values: (_u, splits) => splits.map((i) => opts.categories![i] ?? '') } : {}),
    ];
    const usedScales = [...new Set(series.map((s) => s.scale ?? 'y'))];
    usedScales.forEach((scale, i) => {
      scales[scale] = { range: (_u, _min, max) => [0, Math.max(1, max) * 1.15] };
      axes.push(axis(c, {
        scale,
        side: i === 0 ? 3 : 1,
        size: 48,
        grid: { show: i === 0, stroke: c.grid, width: 1 },
        incrs: opts.unit === undefined ? COUNT_INCRS : undefined,
        values: (_u, splits) => splits.map((v) => (Number.isInteger(v) ? String(v) : '')),
      }));
    });
    return new uPlot(
      {
        width,
        height,
        legend: { show: true, live: true },
        cursor: { drag: { x: false, y: false } },
        scales,
        axes,
        series: [
          opts.categories
            ? { label: 'Day', value: (_u, v) => (v === null ? '–' : opts.categories![v] ?? '') }
            : { label: 'Time' },
          ...series.map((s): uPlot.Series => ({
            label: s.label,
            scale: s.scale ?? 'y',
            stroke: c[s.color],
            width: s.bars ? 0 : 2,
            fill: s.bars ? c[s.color] + 'aa' : c[s.color] + '22',
            paths: s.bars ? uPlot.paths.bars!({ size: [0.5, 48] }) : undefined,
            points: { show: !s.bars, size: 5 },
            spanGaps: true,
            value: (_u, v) => (v === null || v === undefined ? '–' : `${Math.round(v)}${opts.unit ?? ''}`),
          })),
        ],
      },
      [xs, ...series.map((s) => s.values)],
      host,
    );
  });
}
