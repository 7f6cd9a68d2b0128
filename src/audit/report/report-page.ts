/**
 * The report as one self-contained HTML page: uPlot (npm `uplot`, MIT) and
 * the page's own script and style (`assets/report/`) are inlined, the data is
 * embedded as JSON; nothing is loaded from elsewhere (the Content-Security-Policy
 * says so). `live` pages (served on the admin listener) also fetch new data
 * when the range or a filter changes; `static` pages (`robots-proxy report
 * --out`) show the data they were made with. Extension, not in RFC 9309.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ReportData, VersionDiff } from './report-data.js';

/** How the page gets its data. */
export type ReportPageMode = 'live' | 'static';

const require = createRequire(import.meta.url);
/** The page's own script and style, beside the sources and the build (both are three levels below the package root). */
const ASSETS_DIR = new URL('../../../assets/report/', import.meta.url);

interface Assets {
  uplotJs: string;
  uplotCss: string;
  pageJs: string;
  pageCss: string;
}

let assets: Assets | undefined;

/** Reads the inlined files once. @throws when a file is missing (a broken install). */
function loadAssets(): Assets {
  assets ??= {
    uplotJs: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    uplotCss: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
    pageJs: readFileSync(new URL('report.js', ASSETS_DIR), 'utf8'),
    pageCss: readFileSync(new URL('report.css', ASSETS_DIR), 'utf8'),
  };
  return assets;
}

/** JSON safe inside a `<script>` element: `<` escaped, so no `</script>` or `<!--` can end it. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** Text safe inside an inlined `<script>`/`<style>`: a closing tag of either is broken up. */
function inlineSafe(code: string): string {
  return code.replace(/<\/(script|style)/gi, '<\\/$1');
}

/**
 * The Content-Security-Policy of the page: scripts and styles only inline (no other origin),
 * data by `fetch` to this origin only (live) or not at all (static).
 */
export function reportContentSecurityPolicy(mode: ReportPageMode): string {
  return [
    "default-src 'none'",
    "script-src 'unsafe-inline'",
    "style-src 'unsafe-inline'",
    "img-src data: blob:",
    mode === 'live' ? "connect-src 'self'" : "connect-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/**
 * Renders the page.
 * @param data the report to show first.
 * @param diffs robots.txt diffs embedded for a static page (a live page fetches them).
 * @throws when an inlined asset cannot be read.
 */
export function renderReportPage(data: ReportData, mode: ReportPageMode, diffs: readonly VersionDiff[] = []): string {
  const a = loadAssets();
  const csp = reportContentSecurityPolicy(mode);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>robots-proxy report</title>
<style>${inlineSafe(a.uplotCss)}</style>
<style>${inlineSafe(a.pageCss)}</style>
</head>
<body>
<div id="app" data-mode="${mode}">Loading the report… (it needs JavaScript)</div>
<script id="report-data" type="application/json">${scriptJson(data)}</script>
<script id="report-diffs" type="application/json">${scriptJson(diffs)}</script>
<script>${inlineSafe(a.uplotJs)}</script>
<script>${inlineSafe(a.pageJs)}</script>
</body>
</html>
`;
}
