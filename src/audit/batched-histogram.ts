/**
 * A Prometheus histogram counted in plain arrays and exposed through a
 * prom-client registry. prom-client's own `Histogram.observe` validates the
 * label object, hashes it and looks the series up on every call (about 1 µs a
 * request for the proxy's three histograms, issue 11); here a caller resolves
 * a label set to its {@link HistogramSeries} once and then counts into it.
 * The registry renders it at each scrape through the `get()` contract every
 * prom-client metric has, so the exposition text is the one a prom-client
 * `Histogram` writes for the same observations: the same bucket lines
 * (cumulative, `le` first, then `+Inf`), `_sum` and `_count`, the series in
 * the order they were first observed (or zeroed). Extension, not in RFC 9309.
 */
import type { Metric, Registry } from 'prom-client';

/** One label set's counts. */
export class HistogramSeries {
  /** Observations per bucket, not cumulative: index i counts values in (bounds[i-1], bounds[i]]; values above the last bound count only in {@link HistogramSeries.count}. */
  readonly counts: Float64Array;
  /** Sum of the observed values, added in observation order (as prom-client adds them). */
  sum = 0;
  count = 0;

  constructor(
    /** The label values, keyed by label name in the histogram's label order. */
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  /** Counts one value (seconds, or whatever unit the histogram is in). A non-finite value is ignored. O(buckets); never throws. */
  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= (bounds[i] as number)) {
        this.counts[i] = (this.counts[i] as number) + 1;
        break;
      }
    }
    this.sum += value;
    this.count += 1;
  }
}

/** Options of {@link BatchedHistogram}. */
export interface BatchedHistogramOptions<L extends string> {
  name: string;
  help: string;
  /** Label names, in the order their values appear in the exposition. */
  labelNames?: readonly L[];
  /** Upper bounds of the buckets, ascending (`+Inf` is implied). */
  buckets: readonly number[];
  /** Registries to register with. */
  registers: Registry[];
}

/** One exposition sample, as prom-client metrics return them from `get()`. */
interface ExposedValue {
  value: number;
  labels: Record<string, string | number>;
  metricName: string;
}

/**
 * A histogram metric: series resolved once per label set ({@link BatchedHistogram.series}),
 * counted in place, rendered by the registries it was registered with. A histogram without
 * labels has its one series from the start (as prom-client's).
 */
export class BatchedHistogram<L extends string = never> {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram';
  /** For prom-client's cluster aggregation (`AggregatorRegistry`), as its own histograms. */
  readonly aggregator = 'sum';
  readonly #labelNames: readonly L[];
  readonly #bounds: readonly number[];
  /** Series by their label values joined with '\n', in the order they were added. */
  readonly #series = new Map<string, HistogramSeries>();

  /** @throws Error when the name is already registered with one of `registers` (as prom-client's metrics do). */
  constructor(options: BatchedHistogramOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = options.labelNames ?? [];
    this.#bounds = [...options.buckets];
    if (this.#labelNames.length === 0) this.series({} as Record<L, string>);
    // A metric object with prom-client's `get()` contract; the registry needs nothing more to render it.
    for (const registry of options.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels` (created at zero the first time: a series that exists is exposed). O(labels). */
  series(labels: Readonly<Record<L, string>>): HistogramSeries {
    const key = this.#keyOf(labels);
    let series = this.#series.get(key);
    if (series === undefined) {
      const ordered: Record<string, string> = {};
      for (const name of this.#labelNames) ordered[name] = labels[name];
      series = new HistogramSeries(ordered, this.#bounds);
      this.#series.set(key, series);
    }
    return series;
  }

  /** Drops the series of `labels` (no longer exposed; counted from zero if it comes back). A held {@link HistogramSeries} no longer counts. */
  remove(labels: Readonly<Record<L, string>>): void {
    this.#series.delete(this.#keyOf(labels));
  }

  /**
   * Sets every series back to zero (`Registry.resetMetrics()`). Unlike prom-client's histogram,
   * which drops its series, they stay exposed at zero: callers hold their series, and a dropped
   * one would never count again.
   */
  reset(): void {
    for (const series of this.#series.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }

  /** The exposition values (prom-client's `get()` contract): per series its cumulative buckets, `+Inf`, `_sum`, `_count`. */
  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: ExposedValue[] }> {
    const values: ExposedValue[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const series of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.#bounds.length; i++) {
        cumulative += series.counts[i] as number;
        values.push({ value: cumulative, labels: { le: this.#bounds[i] as number, ...series.labels }, metricName: bucketName });
      }
      values.push({ value: series.count, labels: { le: '+Inf', ...series.labels }, metricName: bucketName });
      values.push({ value: series.sum, labels: { ...series.labels }, metricName: `${this.name}_sum` });
      values.push({ value: series.count, labels: { ...series.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  #keyOf(labels: Readonly<Record<L, string>>): string {
    const names = this.#labelNames;
    if (names.length === 1) return labels[names[0] as L];
    let key = '';
    for (const name of names) key += `${labels[name]}\n`;
    return key;
  }
}
