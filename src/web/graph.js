// Draws the execution graph ({ nodes, edges } from /tasks/:id/graph, the renderer `troupe runs
// show --json` uses) as SVG: subtasks in columns by dependency depth, left to right, coloured by
// status (PENDING, RUNNING, SUCCESS, PARTIAL_SUCCESS, FAILED, SKIPPED), edges labelled with the
// arguments they feed; updated in place from events, map items counted as they finish.

const SVG = "http://www.w3.org/2000/svg";
const NODE_WIDTH = 240;
const NODE_HEIGHT = 68;
const GAP_X = 120;
const GAP_Y = 22;
const PAD = 16;

function element(name, attributes = {}, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const clip = (text, max) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

/** The CSS class of a status (`status-partial_success`). */
const statusClass = (status) => `node status-${String(status).toLowerCase()}`;

/** What the node's second status line says about a mapped subtask's items. */
const itemsText = (items) => (items ? `${items.succeeded}/${items.total} items${items.failed ? `, ${items.failed} failed` : ""}` : "");

/**
 * The graph of a plan before anything ran (from a plan-ready event): every node PENDING, each
 * edge labelled with the arguments it feeds, as the server's renderer does.
 */
export function planGraph(subtasks) {
  const ids = new Set(subtasks.map((subtask) => subtask.id));
  return {
    nodes: subtasks.map((subtask) => ({ id: subtask.id, label: subtask.label, agent: subtask.agent, tool: subtask.tool ?? null, status: "PENDING", summary: "", durationMs: null, items: null })),
    edges: subtasks.flatMap((subtask) =>
      (subtask.dependsOn ?? [])
        .filter((from) => ids.has(from))
        .map((from) => ({
          from,
          to: subtask.id,
          label: Object.entries(subtask.args ?? {})
            .filter(([, arg]) => arg && typeof arg === "object" && arg.ref === from)
            .map(([name]) => (name === subtask.mapOver ? `${name} (each)` : name))
            .join(", "),
        })),
    ),
  };
}

/** Column of each node: 0 without dependencies, else one past its deepest dependency. */
function depths(graph) {
  const incoming = new Map(graph.nodes.map((node) => [node.id, []]));
  for (const edge of graph.edges) incoming.get(edge.to)?.push(edge.from);
  const memo = new Map();
  const depth = (id, seen = new Set()) => {
    if (memo.has(id)) return memo.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const parents = (incoming.get(id) ?? []).filter((parent) => incoming.has(parent));
    const value = parents.length === 0 ? 0 : 1 + Math.max(...parents.map((parent) => depth(parent, seen)));
    memo.set(id, value);
    return value;
  };
  for (const node of graph.nodes) depth(node.id);
  return memo;
}

/** Replaces the drawing in `container` with `graph`. */
export function drawGraph(container, graph) {
  container.replaceChildren();
  if (!graph || graph.nodes.length === 0) {
    const empty = document.createElement("p");
    empty.className = "muted";
    empty.textContent = "No plan yet.";
    container.append(empty);
    return;
  }
  const depthOf = depths(graph);
  const columns = [];
  for (const node of graph.nodes) {
    const column = depthOf.get(node.id) ?? 0;
    (columns[column] ??= []).push(node);
  }
  const position = new Map();
  columns.forEach((nodes, column) =>
    nodes.forEach((node, row) => position.set(node.id, { x: PAD + column * (NODE_WIDTH + GAP_X), y: PAD + row * (NODE_HEIGHT + GAP_Y) })),
  );
  const rows = Math.max(...columns.map((nodes) => nodes?.length ?? 0));
  const width = PAD * 2 + columns.length * NODE_WIDTH + (columns.length - 1) * GAP_X;
  const height = PAD * 2 + rows * NODE_HEIGHT + (rows - 1) * GAP_Y;
  const svg = element("svg", { viewBox: `0 0 ${width} ${height}`, width, height, class: "graph", role: "img", "aria-label": "execution graph" });
  const defs = element("defs");
  const marker = element("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
  marker.append(element("path", { d: "M 0 0 L 10 5 L 0 10 z", class: "arrow" }));
  defs.append(marker);
  svg.append(defs);
  for (const edge of graph.edges) {
    const from = position.get(edge.from);
    const to = position.get(edge.to);
    if (!from || !to) continue;
    const x1 = from.x + NODE_WIDTH;
    const y1 = from.y + NODE_HEIGHT / 2;
    const x2 = to.x;
    const y2 = to.y + NODE_HEIGHT / 2;
    const bend = Math.max(24, (x2 - x1) / 2);
    svg.append(element("path", { d: `M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`, class: "edge", "marker-end": "url(#arrow)" }));
    if (edge.label) svg.append(element("text", { x: (x1 + x2) / 2, y: (y1 + y2) / 2 - 5, class: "edge-label", "text-anchor": "middle" }, clip(edge.label, 24)));
  }
  for (const node of graph.nodes) {
    const { x, y } = position.get(node.id);
    const group = element("g", { class: statusClass(node.status), "data-id": node.id, "data-status": node.status, transform: `translate(${x} ${y})` });
    group.append(element("rect", { width: NODE_WIDTH, height: NODE_HEIGHT, rx: 9 }));
    // Three lines: who (id · agent · tool), what (the label), and where it stands (status, items).
    group.append(element("text", { x: 12, y: 20, class: "node-title" }, clip([node.id, node.agent, node.tool].filter(Boolean).join(" · "), 32)));
    group.append(element("text", { x: 12, y: 39, class: "node-label" }, clip(node.label, 34)));
    group.append(element("text", { x: 12, y: 58, class: "node-status" }, node.status.replace("_", " ")));
    group.append(element("text", { x: NODE_WIDTH - 12, y: 58, class: "node-items", "text-anchor": "end" }, itemsText(node.items)));
    group.append(element("title", {}, [node.label, node.summary, node.untrusted ? `untrusted: ${node.untrusted}` : ""].filter(Boolean).join("\n")));
    if (node.untrusted) group.append(element("text", { x: NODE_WIDTH / 2, y: 58, class: "node-untrusted", "text-anchor": "middle" }, "untrusted data"));
    svg.append(group);
  }
  container.append(svg);
}

/** Recolours one node after an event (subtask started, ended, skipped). */
export function setNodeStatus(container, id, status, summary) {
  const group = container.querySelector(`g.node[data-id="${CSS.escape(id)}"]`);
  if (!group) return false;
  group.setAttribute("class", statusClass(status));
  group.setAttribute("data-status", status);
  const label = group.querySelector(".node-status");
  if (label) label.textContent = status.replace("_", " ");
  if (summary) {
    const title = group.querySelector("title");
    if (title) title.textContent = `${title.textContent.split("\n")[0]}\n${summary}`;
  }
  return true;
}

/** Shows a mapped subtask's items as they finish (map-item events): succeeded and failed of the total. */
export function setNodeItems(container, id, items) {
  const group = container.querySelector(`g.node[data-id="${CSS.escape(id)}"]`);
  const text = group?.querySelector(".node-items");
  if (!text) return false;
  text.textContent = itemsText(items);
  group.setAttribute("data-items", `${items.succeeded + items.failed}/${items.total}`);
  return true;
}
