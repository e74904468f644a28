// The Tables view: a list of tables and one table's timeline, from the plugin's JSON API.
// Every URL is relative to the page (/txnlog/ on the api-server), so the view works behind a
// reverse proxy; values from tables are put in the page as text, never as HTML.
"use strict";

const main = document.getElementById("main");
const crumb = document.getElementById("crumb");

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) node.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

async function getJson(url) {
  const response = await fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  return response.json();
}

const fmtTime = (ms) => {
  const date = new Date(ms);
  // a commit's time is whatever its writer recorded: an impossible one must not break the page
  return ms && Number.isFinite(date.getTime()) ? date.toISOString().replace("T", " ").slice(0, 19) + " UTC" : "";
};
const fmtBytes = (n) => {
  if (n === null || n === undefined) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
};
const writerText = (w) => (w ? `${w.dagId} / ${w.taskId} / ${w.runId}` : "");

function badges(list) {
  const cell = el("td", { class: "badges" });
  if (!list || !list.length) cell.append(el("span", { class: "badge ok" }, "healthy"));
  for (const b of list || []) cell.append(el("span", { class: "badge" }, b));
  return cell;
}

async function showList() {
  crumb.textContent = "";
  const data = await getJson("api/tables");
  const rows = data.tables.map((t) =>
    t.error
      ? el("tr", { "data-table": t.id }, el("td", {}, t.uri), el("td", { colspan: 6, class: "error" }, `cannot read: ${t.error}`))
      : el(
          "tr",
          { "data-table": t.id },
          el("td", {}, el("a", { href: `#table=${t.id}`, class: "table-link" }, t.uri)),
          el("td", {}, t.version),
          el("td", {}, fmtTime(t.lastCommit.timestamp), el("br"), t.lastCommit.operation || ""),
          el("td", {}, writerText(t.lastCommit.writer)),
          el("td", {}, t.numFiles),
          el("td", {}, fmtBytes(t.sizeBytes)),
          badges(t.badges),
        ),
  );
  const head = el("tr", {}, ...["table", "version", "last commit", "written by (DAG / task / run)", "files", "size", "health"].map((h) => el("th", {}, h)));
  main.replaceChildren(
    rows.length ? el("table", { id: "tables" }, head, ...rows) : el("p", { class: "muted" }, "No table you may read is known to Airflow."),
  );
}

function timelineRows(entries) {
  return entries.map((e) => {
    const marks = el("td", {});
    if (e.restore) marks.append(el("span", { class: "mark restore" }, "restore"));
    if (e.schemaChange) marks.append(el("span", { class: "mark schema" }, "schema"));
    for (const s of e.savepoints) marks.append(el("span", { class: "mark pin" }, `savepoint ${s}`));
    const run = e.runLink ? el("a", { href: e.runLink, target: "_top" }, writerText(e.writer)) : writerText(e.writer);
    return el(
      "tr",
      { class: "version", "data-version": e.version },
      el("td", {}, e.version),
      el("td", {}, fmtTime(e.timestamp)),
      el("td", {}, e.operation || ""),
      marks,
      el("td", {}, `+${e.rowsAdded ?? "?"} / -${e.rowsRemoved ?? "?"}`),
      el("td", {}, `+${e.filesAdded} / -${e.filesRemoved}`),
      el("td", {}, run),
    );
  });
}

function keyValues(obj) {
  return el("table", {}, ...Object.entries(obj || {}).map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, typeof v === "object" ? JSON.stringify(v) : v))));
}

async function showTable(id) {
  const t = await getJson(`api/tables/${encodeURIComponent(id)}`);
  if (t.error) { main.replaceChildren(el("p", { class: "error" }, `cannot read the table: ${t.error}`)); return; }
  crumb.textContent = ` / ${t.uri}`;
  const timeline = el("tbody", {});
  const more = el("button", { id: "older" }, "Older versions");
  let before = null;
  async function loadPage() {
    const query = before === null ? "limit=50" : `limit=50&before=${before}`;
    const page = await getJson(`api/tables/${encodeURIComponent(id)}/history?${query}`);
    timeline.append(...timelineRows(page.entries));
    before = page.nextBefore;
    more.hidden = before === null;
  }
  more.addEventListener("click", () => loadPage().catch(fail));
  const head = el("tr", {}, ...["version", "committed", "operation", "", "rows", "files", "DAG / task / run"].map((h) => el("th", {}, h)));
  const schema = el("table", {}, el("tr", {}, el("th", {}, "column"), el("th", {}, "type"), el("th", {}, "nullable")),
    ...t.schema.map((f) => el("tr", {}, el("td", {}, f.name), el("td", {}, f.type), el("td", {}, f.nullable ? "yes" : "no"))));
  const savepoints = el("table", {}, el("tr", {}, ...["name", "version", "created", "expires", "reason"].map((h) => el("th", {}, h))),
    ...t.savepoints.map((s) => el("tr", {}, el("td", {}, s.name), el("td", {}, s.version), el("td", {}, fmtTime(s.createdAt)),
      el("td", { class: s.expired ? "error" : "" }, s.expiresAt ? fmtTime(s.expiresAt) + (s.expired ? " (expired)" : "") : "never"), el("td", {}, s.reason || ""))));
  const releases = el("section", { id: "releases" }, el("h2", {}, "Releases"), el("p", { class: "muted" }, "Loading…"));
  main.replaceChildren(
    el("section", {}, el("table", {}, el("tr", {}, el("th", {}, "version"), el("th", {}, "files"), el("th", {}, "size"), el("th", {}, "health")),
      el("tr", {}, el("td", {}, t.version), el("td", {}, t.numFiles), el("td", {}, fmtBytes(t.sizeBytes)), badges(t.badges)))),
    el("section", {}, el("h2", {}, "Size and rows over the latest versions"),
      el("img", { id: "chart", alt: "table size and rows added per version", src: `api/tables/${encodeURIComponent(id)}/chart.svg` })),
    el("section", {}, el("h2", {}, "Timeline"), el("table", { id: "timeline" }, el("thead", {}, head), timeline), more),
    el("section", {}, el("h2", {}, "Savepoints"), savepoints),
    releases,
    el("section", {}, el("h2", {}, "Schema"), el("p", { class: "muted" }, `partitioned by: ${t.partitionColumns.join(", ") || "nothing"}`), schema),
    layoutSection(t.layout),
    el("section", {}, el("h2", {}, "Protocol and features"), keyValues(t.protocol)),
    el("section", {}, el("h2", {}, "Health"), keyValues(t.health),
      el("p", {}, el("a", { href: "../dags/txnlog_maintenance", target: "_top" }, "Maintenance DAG (planned: checkpoint, optimize, vacuum, log cleanup)"))),
    el("section", {}, el("h2", {}, "Properties"), keyValues(t.properties)),
  );
  const releasesLoaded = fillReleases(releases, id)
    .catch((err) => releases.replaceChildren(el("h2", {}, "Releases"), el("p", { class: "error" }, `releases could not load: ${err.message}`)));
  await loadPage();
  main.append(await maintenanceSection(id).catch((err) => el("p", { class: "error" }, `maintenance could not load: ${err.message}`)));
  await releasesLoaded;
}

const kindText = (r) => (r.kind === "rollback" && r.rollbackTo !== null && r.rollbackTo !== undefined ? `rollback to ${r.rollbackTo}` : r.kind);

function publisher(c) {
  if (!c.publishedBy) return "outside Airflow";
  if (!c.publishedBy.dagId) return "a DAG you may not read";
  return c.runLink ? el("a", { href: c.runLink, target: "_top" }, writerText(c.publishedBy)) : writerText(c.publishedBy);
}

function releaseLog(g, latest) {
  const box = el("div", { class: "release-log", "data-log": g.id }, el("h3", {}, `Release log ${g.uri}`));
  if (g.error) { box.append(el("p", { class: "error" }, `cannot read: ${g.error}`)); return box; }
  if (!g.current) { box.append(el("p", { class: "muted" }, g.reason || "no release of this table")); return box; }
  const c = g.current;
  const ahead = g.unreleasedCommits
    ? el("span", { class: "badge", "data-unreleased": g.unreleasedCommits }, `${g.unreleasedCommits} unreleased commit(s): latest version ${latest}`)
    : el("span", { class: "badge ok", "data-unreleased": 0 }, "latest version released");
  box.append(
    el("table", { class: "release-current" },
      el("tr", {}, ...["current release", "kind", "published", "by (DAG / task / run)", "this table's version", "note"].map((h) => el("th", {}, h))),
      el("tr", {}, el("td", {}, c.sequence), el("td", {}, kindText(c)), el("td", {}, fmtTime(c.publishedAt)), el("td", {}, publisher(c)),
        el("td", {}, c.tableVersion, " ", ahead), el("td", {}, c.note || ""))),
    el("table", { class: "release-history" },
      el("tr", {}, ...["release", "kind", "published", "this table's version"].map((h) => el("th", {}, h))),
      ...g.releases.map((r) => el("tr", { class: "release", "data-sequence": r.sequence }, el("td", {}, r.sequence), el("td", {}, kindText(r)),
        el("td", {}, fmtTime(r.publishedAt)), el("td", {}, r.tableVersion ?? "not in it")))),
  );
  if (g.count > g.releases.length) box.append(el("p", { class: "muted" }, `the newest ${g.releases.length} of ${g.count} releases`));
  return box;
}

async function fillReleases(section, id) {
  const data = await getJson(`api/tables/${encodeURIComponent(id)}/releases`);
  const parts = data.logs.length
    ? data.logs.map((g) => releaseLog(g, data.latestVersion))
    : [el("p", { class: "muted" }, "No release log holds this table.")];
  if (data.moreLogs) parts.push(el("p", { class: "muted" }, `${data.moreLogs} more release log(s) not shown`));
  section.replaceChildren(el("h2", {}, "Releases"), ...parts);
}

function layoutSection(l) {
  const clustering = l.clusteringColumns.length
    ? `clustered by ${l.clusteringColumns.join(", ")}: ${l.clusteredFiles} of ${l.files} files clustered (${fmtBytes(l.clusteredBytes)} of ${fmtBytes(l.bytes)}, ${l.bytes ? Math.round((100 * l.clusteredBytes) / l.bytes) : 0}%)` +
      (l.otherProviderFiles ? `, ${l.otherProviderFiles} by another clustering implementation` : "")
    : l.clustered ? "clustered table without keys (CLUSTER BY NONE)" : "not clustered";
  const rt = l.rowTracking;
  const rows = rt.enabled ? `on${rt.highWaterMark != null ? ` (row id high-water mark ${rt.highWaterMark})` : ""}` : rt.supported ? "supported, not enabled" : "off";
  return el("section", { id: "layout" }, el("h2", {}, "Layout"),
    el("table", {}, el("tr", {}, el("th", {}, "clustering"), el("td", { id: "clustering" }, clustering)),
      el("tr", {}, el("th", {}, "row tracking"), el("td", { id: "row-tracking" }, rows))));
}

const DECISION_HEAD = ["kind", "partition", "decision", "status", "rule", "observed / threshold", "reason or error", "bytes written (predicted / measured)", "seconds"];

function decisionRow(d) {
  const figures = d.decision === "action" ? `${fmtBytes(d.predicted_bytes_written)} / ${fmtBytes(d.actual_bytes_written)}` : "";
  return el("tr", { class: "decision" }, el("td", {}, d.kind), el("td", {}, d.partition || ""), el("td", {}, d.decision),
    el("td", { class: ["failed", "error", "conflict", "no_result"].includes(d.status) ? "error" : "" }, d.status),
    el("td", {}, d.rule || ""), el("td", {}, d.rule ? `${d.observed} / ${d.threshold}` : ""),
    el("td", {}, d.error || d.reason || ""), el("td", {}, figures), el("td", {}, d.seconds ?? ""));
}

const STATE_CLASS = { planned: "state-planned", running: "state-running", committed: "ok", failed: "state-failed", skipped: "state-skipped" };

function maintenanceState(s) {
  if (!s) return el("p", { id: "maintenance-state", class: "muted" }, "No maintenance state: no run has planned this table yet.");
  const run = s.dag_id ? `${s.dag_id} / ${s.run_id}` : "a run of a DAG you may not read";
  return el("p", { id: "maintenance-state" },
    el("span", { class: `badge ${STATE_CLASS[s.state] || ""}`, "data-state": s.state }, s.state),
    ` since ${fmtTime(s.since)}: ${s.reason} (`, s.runLink ? el("a", { href: s.runLink, target: "_top" }, run) : run, ")",
    s.inFlightError ? el("span", { class: "error" }, ` runs in flight unknown: ${s.inFlightError}`) : null);
}

async function maintenanceSection(id) {
  const m = await getJson(`api/tables/${encodeURIComponent(id)}/maintenance`);
  const section = el("section", { id: "maintenance" }, el("h2", {}, "Maintenance"));
  if (!m.configured) {
    if (m.state) section.append(maintenanceState(m.state));
    section.append(el("p", { class: "muted" }, "No maintenance-history table is configured ([txnlog] maintenance_history_uri)."));
    return section;
  }
  section.append(maintenanceState(m.state));
  if (!m.lastPlan) {
    section.append(el("p", { class: "muted" }, "No planned maintenance has recorded this table yet."));
    return section;
  }
  const p = m.lastPlan;
  section.append(
    el("p", {}, `Last plan: ${p.dag_id} / ${p.run_id}, ${fmtTime(p.recorded_at)}, at version ${p.table_version}${p.dry_run ? " (dry run)" : ""}`),
    el("table", { id: "last-plan" }, el("tr", {}, ...DECISION_HEAD.map((h) => el("th", {}, h))), ...p.decisions.map(decisionRow)),
    el("h2", {}, "Maintenance history"),
    m.history.length
      ? el("table", { id: "maintenance-history" }, el("tr", {}, el("th", {}, "recorded"), ...DECISION_HEAD.map((h) => el("th", {}, h))),
        ...m.history.map((d) => { const row = decisionRow(d); row.prepend(el("td", {}, fmtTime(d.recorded_at))); return row; }))
      : el("p", { class: "muted" }, "No earlier maintenance actions."),
  );
  return section;
}

function fail(err) {
  main.replaceChildren(el("p", { class: "error" }, `The view could not load: ${err.message}`));
}

function route() {
  const match = /^#table=([0-9a-f]+)$/.exec(window.location.hash);
  (match ? showTable(match[1]) : showList()).catch(fail);
}

window.addEventListener("hashchange", route);
route();
