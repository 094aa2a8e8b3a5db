// chatfmt playground: plain JavaScript, no build step. Calls the gateway's /v1 endpoints.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { templates: [], examples: {}, server: {}, timer: null };

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const resp = await fetch(path, init);
  const data = await resp.json().catch(() => ({ error: { message: `HTTP ${resp.status}` } }));
  if (!resp.ok) { const err = new Error(data.error?.message || `HTTP ${resp.status}`); err.param = data.error?.param; throw err; }
  return data;
}

// ------------------------------------------------------------------ JSON editors
function readJson(id, errorId) {
  const text = $(id).value.trim();
  $(errorId).textContent = "";
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch (e) {
    const m = /position (\d+)/.exec(e.message);
    let where = "";
    if (m) {
      const before = text.slice(0, Number(m[1]));
      const line = before.split("\n").length, col = before.length - before.lastIndexOf("\n");
      where = ` (line ${line}, column ${col})`;
    }
    $(errorId).textContent = `${id}: not valid JSON${where}: ${e.message}`;
    throw e;
  }
}

function showFieldError(err) {
  // Server errors name the field: messages[2].content, tools[0].function, chat_template_kwargs …
  const param = err.param || "";
  const box = param.startsWith("messages") ? "messages-error"
    : param.startsWith("tools") ? "tools-error"
    : param.startsWith("chat_template_kwargs") ? "options-error" : "render-error";
  $(box).textContent = param ? `${param}: ${err.message.replace(param + ": ", "")}` : err.message;
}

// ------------------------------------------------------------------ template choice
function currentTemplate() {
  const name = $("template-search").value.trim().toLowerCase();
  return state.templates.find((t) => t.name.toLowerCase() === name || t.aliases.includes(name));
}

function jinjaSource() {
  const text = $("jinja-source").value;
  if (text.trim().startsWith("{")) {  // a tokenizer_config.json
    try {
      const cfg = JSON.parse(text);
      let tpl = cfg.chat_template;
      if (Array.isArray(tpl)) tpl = (tpl.find((t) => t.name === "default") || tpl[0]).template;
      const variables = {};
      for (const key of ["bos_token", "eos_token", "unk_token", "pad_token"]) {
        const v = cfg[key];
        if (typeof v === "string") variables[key] = v;
        else if (v && typeof v.content === "string") variables[key] = v.content;
      }
      return { source: tpl || "", variables };
    } catch (e) { /* not JSON: a template that starts with { */ }
  }
  return { source: text, variables: {} };
}

function buildOptions() {
  const box = $("options");
  box.textContent = "";
  const tpl = $("mode-jinja").checked ? null : currentTemplate();
  $("template-info").textContent = tpl
    ? `${tpl.description || ""} · tool parser: ${tpl.tool_parser || "none"} · reasoning: ${tpl.reasoning_parser || "none"}`
    : "";
  if (!tpl) return;
  for (const [name, value] of Object.entries(tpl.options)) {
    const label = document.createElement("label");
    const multiline = typeof value === "string" && value.includes("\n");
    const input = document.createElement(multiline ? "textarea" : "input");
    input.dataset.option = name;
    input.dataset.default = JSON.stringify(value);
    if (typeof value === "boolean") { input.type = "checkbox"; input.checked = value; label.append(input, " " + name); }
    else {
      if (!multiline) input.type = "text";
      input.value = value === null ? "" : String(value);
      input.dataset.kind = typeof value;
      label.append(name + " ", input);
    }
    box.append(label);
  }
}

function optionInputs() { return $("options").querySelectorAll("[data-option]"); }

function options() {
  // Only the options the user changed: the template's defaults are its own business.
  const out = {};
  for (const input of optionInputs()) {
    let value;
    if (input.type === "checkbox") value = input.checked;
    else if (input.value === "") value = null;
    else value = input.dataset.kind === "number" ? Number(input.value) : input.value;
    if (JSON.stringify(value) !== input.dataset.default) out[input.dataset.option] = value;
  }
  return out;
}

function templateFields() {
  if ($("mode-jinja").checked) {
    const { source, variables } = jinjaSource();
    return { chat_template: source, variables };
  }
  return { template: $("template-search").value.trim() };
}

// ------------------------------------------------------------------ render
function schedule() { clearTimeout(state.timer); state.timer = setTimeout(render, 250); saveState(); }

async function render() {
  for (const id of ["render-error", "messages-error", "tools-error", "options-error"]) $(id).textContent = "";
  let messages, tools;
  try { messages = readJson("messages", "messages-error"); tools = readJson("tools", "tools-error"); } catch (e) { return; }
  if (!messages) return;
  const fields = templateFields();
  if (!fields.template && !fields.chat_template) return;
  try {
    const data = await api("/v1/render", {
      ...fields, messages, tools: tools && tools.length ? tools : null,
      chat_template_kwargs: $("mode-jinja").checked ? {} : options(),
      add_generation_prompt: $("opt-add-generation-prompt").checked,
    });
    showPrompt(data.segments);
    showTokens(data.tokens);
  } catch (e) {
    $("prompt").textContent = "";
    showFieldError(e);
  }
}

function showPrompt(segments) {
  const pre = $("prompt");
  pre.textContent = "";
  for (const seg of segments) {
    const span = document.createElement("span");
    span.className = `seg ${seg.kind}${seg.trained ? " trained" : ""}`;
    if (seg.message !== null) span.dataset.message = seg.message;
    span.dataset.kind = seg.kind;
    span.dataset.trained = seg.trained;
    span.title = `${seg.kind}${seg.trained ? ", trained" : ""}${seg.message !== null ? `, messages[${seg.message}]` : ""}`;
    span.textContent = seg.text;
    pre.append(span);
  }
}

function showTokens(tokens) {
  const box = $("tokens");
  if (!tokens) return;
  box.textContent = "";
  $("token-count").textContent = `${tokens.length} tokens, ${tokens.filter((t) => t.trained).length} trained`;
  for (const tok of tokens) {
    const span = document.createElement("span");
    span.className = `tok${tok.control ? " control" : ""}${tok.trained ? " trained" : ""}`;
    span.title = `id ${tok.id}${tok.control ? ", control" : ""}${tok.trained ? ", trained" : ""}`;
    span.textContent = tok.text;
    const id = document.createElement("small");
    id.textContent = tok.id;
    span.append(id);
    box.append(span);
  }
}

// ------------------------------------------------------------------ parse and generate
function showParsed(data) {
  $("parsed").textContent = JSON.stringify(data.message, null, 2)
    + `\n\nfinish_reason: ${data.finish_reason}` + (data.trailing_text ? `\ntrailing_text: ${JSON.stringify(data.trailing_text)}` : "");
}

async function parseOutput() {
  $("parse-error").textContent = "";
  let tools;
  try { tools = readJson("tools", "tools-error"); } catch (e) { return; }
  try {
    const data = await api("/v1/parse", {
      ...templateFields(), output: $("output").value, tools: tools && tools.length ? tools : null,
      chat_template_kwargs: $("mode-jinja").checked ? {} : options(),
    });
    showParsed(data);
  } catch (e) { $("parse-error").textContent = e.message; }
}

function showAnswer(message) {
  const calls = message.tool_calls || [];
  $("answer").textContent = (message.reasoning_content ? `[reasoning] ${message.reasoning_content}\n\n` : "")
    + (message.content || "")
    + calls.map((c) => `\n[tool call] ${c.function.name}(${c.function.arguments})`).join("");
}

async function generate() {
  // The prompt the page shows (the chosen template and options), completed by the model as
  // it is, up to the visible token cap; the output is then read by the chosen template's parser.
  const answer = $("answer");
  const prompt = $("prompt").textContent;
  if (!prompt) { answer.textContent = "nothing to send: render a prompt first"; return; }
  const cap = Math.max(1, Math.floor(Number($("max-tokens").value) || 256));
  const tpl = $("mode-jinja").checked ? null : currentTemplate();
  const body = { model: $("model-select").value, prompt, max_tokens: cap, stream: true };
  if (tpl && tpl.stop_words.length) body.stop = tpl.stop_words;
  answer.textContent = "";
  $("output").value = "";
  const resp = await fetch("/v1/completions", {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  });
  if (!resp.ok) { const data = await resp.json(); answer.textContent = data.error?.message || `HTTP ${resp.status}`; return; }
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "", raw = "", finish = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const line = buffer.slice(0, end).trim();
      buffer = buffer.slice(end + 2);
      if (!line.startsWith("data:") || line.endsWith("[DONE]")) continue;
      const event = JSON.parse(line.slice(5));
      if (event.error) { answer.textContent += `\n[error] ${event.error.message}`; return; }
      const choice = event.choices?.[0];
      if (!choice) continue;
      raw += choice.text || "";
      if (choice.finish_reason) finish = choice.finish_reason;
      answer.textContent = raw;
    }
  }
  $("output").value = raw;
  let tools;
  try { tools = readJson("tools", "tools-error"); } catch (e) { tools = null; }
  try {
    const data = await api("/v1/parse", {
      ...templateFields(), output: raw, tools: tools && tools.length ? tools : null,
      chat_template_kwargs: $("mode-jinja").checked ? {} : options(), truncated: finish === "length",
    });
    showParsed(data);
    showAnswer(data.message);
  } catch (e) { $("parse-error").textContent = e.message; }
  if (finish === "length") answer.textContent += `\n[stopped at the token cap: ${cap}]`;
}

// ------------------------------------------------------------------ shareable state
function encodeState(obj) {
  const bytes = new TextEncoder().encode(JSON.stringify(obj));
  let bin = ""; for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function decodeState(text) {
  const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
}

function saveState() {
  const s = {
    mode: $("mode-jinja").checked ? "jinja" : "registered", template: $("template-search").value,
    jinja: $("mode-jinja").checked ? $("jinja-source").value : undefined,
    messages: $("messages").value, tools: $("tools").value, options: options(),
    agp: $("opt-add-generation-prompt").checked, output: $("output").value,
  };
  history.replaceState(null, "", "#state=" + encodeState(s));
}

function loadState() {
  const m = /#state=([\w-]+)/.exec(location.hash);
  if (!m) return false;
  try {
    const s = decodeState(m[1]);
    $(s.mode === "jinja" ? "mode-jinja" : "mode-registered").checked = true;
    $("template-search").value = s.template || "";
    $("jinja-source").value = s.jinja || "";
    $("messages").value = s.messages || "";
    $("tools").value = s.tools || "[]";
    $("opt-add-generation-prompt").checked = s.agp !== false;
    $("output").value = s.output || "";
    switchMode();
    for (const input of optionInputs()) {
      const v = (s.options || {})[input.dataset.option];
      if (v === undefined) continue;
      if (input.type === "checkbox") input.checked = Boolean(v); else input.value = String(v);
    }
    return true;
  } catch (e) { return false; }
}

// ------------------------------------------------------------------ wiring
function switchMode() {
  const jinja = $("mode-jinja").checked;
  $("jinja-box").hidden = !jinja;
  $("registered-box").hidden = jinja;
  buildOptions();
}

function loadExample() {
  const ex = state.examples[$("examples").value];
  if (!ex) return;
  $("mode-registered").checked = true;
  $("template-search").value = ex.template;
  $("messages").value = JSON.stringify(ex.messages, null, 2);
  $("tools").value = JSON.stringify(ex.tools, null, 2);
  switchMode();
  schedule();
}

async function init() {
  const [templates, examples] = await Promise.all([api("/v1/templates"), fetch("/playground/examples.json").then((r) => r.json())]);
  state.templates = templates.data;
  state.server = templates;
  state.examples = examples;
  const list = $("template-list");
  for (const t of state.templates) { const o = document.createElement("option"); o.value = t.name; list.append(o); }
  for (const [key, ex] of Object.entries(examples)) { const o = document.createElement("option"); o.value = key; o.textContent = ex.title; $("examples").append(o); }
  $("trust-note").textContent = templates.trust_request_chat_template
    ? "Templates you paste run on the server in a sandbox with time and size limits."
    : "This server does not accept templates from the page (start it with --trust-request-chat-template).";
  $("jinja-source").disabled = !templates.trust_request_chat_template;
  $("jinja-file").disabled = !templates.trust_request_chat_template;
  for (const name of templates.models) { const o = document.createElement("option"); o.value = name; o.textContent = name; $("model-select").append(o); }
  $("model-box").hidden = templates.models.length === 0;
  $("server-info").textContent = `${state.templates.length} templates` + (templates.models.length ? ` · models: ${templates.models.join(", ")}` : " · no model (chatfmt playground)");
  if (!loadState()) { $("examples").value = "chat"; loadExample(); }
  for (const id of ["messages", "tools", "jinja-source", "template-search"]) $(id).addEventListener("input", () => { if (id === "template-search") buildOptions(); schedule(); });
  $("options").addEventListener("input", schedule);
  $("opt-add-generation-prompt").addEventListener("change", schedule);
  for (const id of ["mode-registered", "mode-jinja"]) $(id).addEventListener("change", () => { switchMode(); schedule(); });
  $("load-example").addEventListener("click", loadExample);
  $("parse-btn").addEventListener("click", parseOutput);
  $("generate-btn").addEventListener("click", generate);
  $("output").addEventListener("input", saveState);
  $("jinja-file").addEventListener("change", async (ev) => { const f = ev.target.files[0]; if (f) { $("jinja-source").value = await f.text(); schedule(); } });
  $("share-btn").addEventListener("click", () => { saveState(); navigator.clipboard?.writeText(location.href); });
  render();
}

init();
