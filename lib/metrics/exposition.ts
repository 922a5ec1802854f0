// The Prometheus text exposition format (version 0.0.4) of one collection. Written here rather
// than with the exporter's serializer: that one puts a histogram's _count and _sum before its
// buckets and adds OpenMetrics-only lines (# UNIT), which stricter readers of the 0.0.4 format
// refuse; here each histogram reads as Prometheus' own clients write it (buckets, _sum, _count).
// types only: the SDK is imported by export.ts, when metrics are on
import type { DataPointType as DataPointTypes, MetricData, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { Attributes } from '@opentelemetry/api';

const escapeHelp = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const escapeLabel = (s: string) => s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');

function number(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return Number.isNaN(v) ? 'NaN' : String(v);
}

function labels(attributes: Attributes, extra?: Record<string, string>): string {
  const pairs = Object.entries({ ...attributes, ...extra })
    .filter(([, v]) => v !== undefined && v !== null)
    .map(([k, v]) => `${k.replace(/[^a-zA-Z0-9_]/g, '_')}="${escapeLabel(String(v))}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
}

function family(metric: MetricData, DataPointType: typeof DataPointTypes): string {
  let name = metric.descriptor.name.replace(/[^a-zA-Z0-9_:]/g, '_');
  const counter = metric.dataPointType === DataPointType.SUM && metric.isMonotonic;
  if (counter && !name.endsWith('_total')) name += '_total';
  const type = metric.dataPointType === DataPointType.HISTOGRAM ? 'histogram' : counter ? 'counter' : 'gauge';
  const lines = [`# HELP ${name} ${escapeHelp(metric.descriptor.description || metric.descriptor.name)}`, `# TYPE ${name} ${type}`];
  if (metric.dataPointType === DataPointType.HISTOGRAM) {
    for (const point of metric.dataPoints) {
      const { buckets, sum, count } = point.value;
      let cumulative = 0;
      buckets.boundaries.forEach((bound, i) => {
        cumulative += buckets.counts[i] ?? 0;
        lines.push(`${name}_bucket${labels(point.attributes, { le: number(bound) })} ${cumulative}`);
      });
      lines.push(`${name}_bucket${labels(point.attributes, { le: '+Inf' })} ${count}`);
      lines.push(`${name}_sum${labels(point.attributes)} ${number(sum ?? 0)}`);
      lines.push(`${name}_count${labels(point.attributes)} ${count}`);
    }
  } else if (metric.dataPointType === DataPointType.SUM || metric.dataPointType === DataPointType.GAUGE) {
    for (const point of metric.dataPoints) lines.push(`${name}${labels(point.attributes)} ${number(point.value)}`);
  } else {
    return '';
  }
  return lines.join('\n');
}

/** Every metric of the collection, one family each, in the text format. */
export function prometheusText(collected: ResourceMetrics, DataPointType: typeof DataPointTypes): string {
  const families = collected.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.dataPoints.length > 0).map((m) => family(m, DataPointType)).filter(Boolean);
  return families.length ? `${families.join('\n')}\n` : '';
}
