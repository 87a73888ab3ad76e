/**
 * The catalogue of troupe's error codes: every code an error or a failed tool call carries, with
 * its kind, HTTP status, CLI exit code and a one-line remedy. The CLI's exit codes, the server's
 * error statuses and `docs/errors.md` are all read from here, and an error's `code` is typed as a
 * key of this list, so a code without an entry does not compile.
 */

/** What went wrong, broadly: whose fault it is and whether retrying can help. */
export type ErrorKind = "input" | "config" | "model" | "tool" | "denied" | "not_found" | "conflict" | "system";

/** Exit codes (docs/errors.md): 0 completed · 1 failed · 2 bad input or configuration · 3 waiting for a person. */
export type ExitCode = 0 | 1 | 2 | 3;

export interface ErrorEntry<Kind extends ErrorKind = ErrorKind> {
  kind: Kind;
  /** The HTTP status the server answers with. */
  status: number;
  /** The CLI's exit code. */
  exit: ExitCode;
  /** What to do about it, in one line. */
  remedy: string;
}

/** The status and exit code a kind has unless a code says otherwise. */
export const KIND_DEFAULTS: Record<ErrorKind, { status: number; exit: ExitCode }> = {
  input: { status: 400, exit: 2 },
  config: { status: 500, exit: 2 },
  model: { status: 502, exit: 1 },
  tool: { status: 422, exit: 1 },
  denied: { status: 403, exit: 1 },
  not_found: { status: 404, exit: 2 },
  conflict: { status: 409, exit: 2 },
  system: { status: 500, exit: 1 },
};

function kindOf<Kind extends ErrorKind>(kind: Kind) {
  return (remedy: string, status: number = KIND_DEFAULTS[kind].status): ErrorEntry<Kind> => ({ kind, status, exit: KIND_DEFAULTS[kind].exit, remedy });
}

const input = kindOf("input");
const config = kindOf("config");
const model = kindOf("model");
const tool = kindOf("tool");
const denied = kindOf("denied");
const notFound = kindOf("not_found");
const conflict = kindOf("conflict");
const system = kindOf("system");

export const ERROR_CODES = {
  // Requests and flags
  bad_request: input("Fix the request as its message says."),
  invalid_json: input("Send the body as one valid JSON object."),
  invalid_body: input("Send a JSON object of the shape the route documents (GET /api/v1/openapi.json)."),
  unknown_field: input("Remove the fields the route does not take (data.fields names them)."),
  body_too_large: input("Send a smaller body, or raise the server's body limit.", 413),
  unsupported_media_type: input("Send the body with Content-Type: application/json.", 415),
  route_not_found: notFound("Check the method and path against GET /api/v1/openapi.json."),
  last_event_id_invalid: input("Send the seq of an event already received as Last-Event-ID."),
  cursor_invalid: input("Send a next_cursor from an earlier page of the same listing, unchanged."),
  idempotency_key_invalid: input("Send an Idempotency-Key of 1-255 visible characters."),
  idempotency_key_reused: input("Use a new Idempotency-Key for a different request body.", 422),
  idempotency_key_race: conflict("Retry the request: another one with the same key won the race."),
  conflicting_flags: input("Pass only one of the flags the message names."),
  invalid_args: input("Pass --args as a JSON object."),
  invalid_arguments: input("Give the arguments the tool's or command's schema asks for (troupe tools show NAME)."),
  invalid_budget: input("Give budget flags as positive numbers (e.g. --max-cost 0.5)."),
  invalid_concurrency: input("Give --concurrency (or its setting) as a whole number in the range the message names."),
  stdin_is_terminal: input("Pipe the input in (echo \"…\" | troupe …), or pass it as an argument."),
  stdin_too_large: input("Pipe in less, or pass a file."),
  invalid_flag: input("Give the flag a value in the range the message names."),
  invalid_decision: input("Pass --decision as one of the values the message lists."),
  invalid_format: input("Pass --format jsonl or --format csv."),
  invalid_history_budget: input("Pass --history-budget as a positive number of tokens."),
  invalid_limit: input("Pass --limit as a whole number from 1 to 100000."),
  invalid_max_iterations: input("Pass --max-iterations as a small positive whole number."),
  invalid_min_pass_rate: input("Pass --min-pass-rate as a number from 0 to 1, or a percentage."),
  invalid_on_busy: input("Pass --on-busy as one of the strategies the message lists."),
  invalid_review: input("Pass --review as auto, always or never."),
  invalid_principal: input("Pass --principal as an API key's name (letters, digits, '.', '_', '-')."),
  invalid_status: input("Pass --status as one of the values the message lists."),
  invalid_thread: input("Use a thread id of 1-128 letters, digits, '.', '_', ':' or '-'."),
  invalid_keep: input("Pass --keep as a list of run statuses."),
  invalid_duration: input("Write durations as a number and a unit: 30d, 12h, 90m, 45s, 2w."),
  invalid_cron: input('Write a cron expression of five fields, e.g. "0 9 * * 1-5".'),
  invalid_timezone: input("Use an IANA time zone name such as Europe/Paris, or UTC."),
  invalid_schedule: input("Fix the schedule's field the message names."),
  invalid_grant: input("Fix the grant's field the message names (docs/trust.md)."),
  invalid_request: input("Fix the request's field the message names."),
  invalid_weights: input("Give one weight per voter, in order."),
  missing_options: input("Pass --options with the choices, comma-separated."),
  plan_unreadable: input("Point --plan at a readable JSON file."),
  invalid_plan: input("Give the plan as a list of subtasks that passes the plan checks the message lists."),
  invalid_fork: input("Fix the fork request's field the message names."),
  invalid_filter: input("Filter on plain field names (letters, digits, '_', up to four levels with '.')."),
  invalid_operation: input("Use one of the store operations the tool documents."),
  invalid_output_schema: input("Give an output schema that is a valid JSON Schema object (at most 64 KiB, 32 levels), whose patterns RE2 can run (no lookaround or backreferences)."),
  typed_answer_unsupported: input("Set a provider (TROUPE_PROVIDER or --provider): the offline model writes no typed answers."),
  context_too_large: input("Send less context with the task."),
  unknown_tool: input("Name a tool troupe has (troupe tools list)."),
  unknown_agent: input("Name an agent troupe has (troupe agents)."),
  unknown_voter: input("Name a voter whose model's provider is configured."),
  unknown_subtask: input("Name a subtask of the plan."),

  // Waiting runs and decisions
  answer_required: input("Answer the question (--answer TEXT, or decision answer), or reject."),
  decision_required: input("Pass --approve, --reject or --answer to resume a waiting run."),
  decision_invalid: input("Reply with a decision the waiting step takes: approve or reject (with feedback) for a tool call."),
  elicitation_answer_invalid: input("Answer the tool server's form with values its fields take (the message names each wrong one)."),
  elicitation_answer_required: input("Answer a tool server's question with its fields (--answer '{…}', or decision answer with content), or --reject to decline."),
  edit_required: input("Send a plan or an answer with decision edit."),
  plan_required: input("Send the plan to run with decision edit."),
  empty_answer: model("The model answered with nothing twice: run again, or choose another model."),
  not_waiting: input("Resume the run without a decision: it is not waiting for one."),
  unknown_interrupt: input("Answer one of the interrupts the run waits on (data lists them)."),
  interrupt_not_pending: conflict("Answer one of the interrupts the task waits on (data lists them)."),

  // Runs, threads, tasks, forks
  unknown_run: notFound("Check the run id (troupe runs list)."),
  unknown_thread: notFound("Check the thread id (troupe runs list)."),
  thread_not_found: notFound("Check the thread id (troupe runs list)."),
  task_not_found: notFound("Check the task id; a task is visible only to the key that created it."),
  eval_not_found: notFound("Check the eval id; an eval is visible only to the key that started it."),
  grant_not_found: notFound("Check the grant id (troupe grants list)."),
  schedule_not_found: notFound("Check the schedule's id or name (troupe schedules list)."),
  worker_not_found: notFound("Check the worker id (GET /api/v1/workers lists the live ones)."),
  stash_missing: notFound("Refer to a result a finished subtask stored."),
  invalid_stash_ref: notFound("Write stash references as results.<subtask> or stash.<key>."),
  no_checkpoints: notFound("Fork a run whose thread still holds checkpoints."),
  unknown_fork_point: notFound("Fork from a subtask of the run or a checkpoint of its thread (troupe runs history)."),
  checkpoint_at_end: input("Fork from an earlier checkpoint: nothing follows this one."),
  checkpoint_at_start: input("Run the task again instead (troupe run): nothing ran before this checkpoint."),
  checkpoint_of_another_run: input("Fork the run the checkpoint belongs to."),
  run_active: conflict("Wait for the run to stop, or cancel it, then fork it."),
  run_cancelled: conflict("Start the task again: the run was cancelled."),
  run_finished: conflict("Start a new run: this one has finished."),
  run_started: conflict("Resume the run instead of starting it again."),
  run_waiting: conflict("Wait for the earlier run on the thread to stop."),
  cancelled_waiting: conflict("Start the run again: it was cancelled before it ran."),
  thread_busy: conflict("Resume the thread's run, use another thread, or pass --on-busy enqueue|interrupt|rollback."),
  thread_in_use: conflict("Fork into a new thread: this one already holds runs."),
  task_finished: conflict("Start a new task: this one has finished."),
  task_not_cancellable: conflict("Try the cancel again: the task changed meanwhile."),
  task_not_waiting: conflict("Send a decision only while the task waits for a person."),
  eval_case: conflict("Run the eval again instead of forking one of its cases."),
  eval_finished: conflict("Start a new eval: this one has finished."),
  schedule_exists: conflict("Remove the existing schedule first, or choose another name."),
  schedule_from_config: conflict("Change the schedule in the config file, where it is defined."),
  no_shared_queue: conflict("Use Postgres (TROUPE_DATABASE_URL) for workers; with SQLite the server runs its own tasks."),
  budget_exhausted: denied("Raise the run's budget (--max-cost, --max-tokens, --max-time) or ask for less."),

  // The Agent Protocol (LangGraph's SDK clients, /langgraph)
  assistant_not_found: notFound("Use the assistant troupe, or its id (POST /langgraph/assistants/search lists it)."),
  run_not_found: notFound("Check the run and thread ids; a run is visible only to the key that made it, under its own thread."),
  thread_exists: conflict("Choose another thread_id, or send if_exists: do_nothing to get the existing thread."),
  agent_protocol_unsupported: input("Leave out what the message names: troupe's Agent Protocol does not take it (docs/agent-chat-ui.md lists what it takes).", 422),
  command_invalid: input("Send command.resume with the answer the run waits for, or command.goto \"__end__\" to stop it; not with input.", 422),
  invalid_namespace: input("Name a namespace of 1-10 labels, each 1-128 characters without '.'."),
  store_full: conflict("Delete some of your store's items first: a key's namespaces hold at most the number the message names together."),

  // Access
  unauthorized: denied("Send an API key: Authorization: Bearer <key>.", 401),
  invalid_api_key: denied("Send a valid API key (TROUPE_API_KEYS lists them).", 401),
  admin_required: denied("Use a key named in TROUPE_ADMINS."),
  rate_limited: denied("Retry after the Retry-After seconds, or raise the rate limit.", 429),
  too_many_schedules: denied("Remove one of the key's schedules first (DELETE /api/v1/schedules/{id}), or raise the config's server.schedules.maxPerKey."),
  schedules_too_frequent: denied("Schedule it less often, remove another of the key's schedules, or raise the config's server.schedules.maxFiresPerHourPerKey."),
  host_not_allowed: denied("Reach troupe by an address it listens on (localhost, 127.0.0.1), or add the name to --allowed-hosts (TROUPE_ALLOWED_HOSTS).", 421),
  origin_not_allowed: denied("Change things from troupe's own pages, or add the site's name to --allowed-hosts (TROUPE_ALLOWED_HOSTS)."),

  // The server's own state
  overloaded: system("Retry after the Retry-After seconds: the server is under load.", 503),
  shutting_down: system("Retry shortly, against a server that is not stopping.", 503),
  not_ready: system("Wait until GET /api/v1/ready answers 200.", 503),
  internal_error: system("See the server's log for the fault and report it."),

  // Configuration and environment
  invalid_config: config("Fix the config file as the message says (docs/configuration.md)."),
  missing_config: config("Point TROUPE_CONFIG at a config file that exists."),
  invalid_env: config("Fix the environment variable the message names."),
  missing_env: config("Set the environment variable the message names."),
  invalid_server_config: config("Fix the server setting the message names."),
  invalid_api_keys: config("Write TROUPE_API_KEYS as name:key pairs, comma-separated."),
  api_keys_missing: config("Set TROUPE_API_KEYS, or serve on a loopback address only."),
  auth_required: config("Serve without API keys only on a loopback address."),
  invalid_base_url: config("Give a base URL such as http://127.0.0.1:8000/v1."),
  unknown_provider: config("Use a known provider id (troupe models lists them)."),
  missing_model: config("Name a model: provider:model, --model or TROUPE_MODEL."),
  invalid_script: config("Point the scripted provider at a readable script file."),
  missing_api_key: config("Set the environment variable the remote agent's apiKeyEnv names."),
  remote_agent_unavailable: config("Check the remote agent's URL and that it is up."),
  mcp_unavailable: config("Check the MCP server's command or URL and that it starts."),
  mcp_login_required: config("Run troupe mcp login <server> to authorize troupe with the server's authorization server."),
  mcp_credentials_unreadable: config("Set TROUPE_SECRET_KEY to the key the credentials were sealed with, or run troupe mcp login <server> again."),
  mcp_oauth_refused: config("Check the server's OAuth metadata: troupe refused an endpoint it names (the message says why)."),
  secret_key_invalid: config("Give TROUPE_SECRET_KEY (or the data directory's secret.key) as 32 bytes in base64 or hex."),
  secret_key_unsafe: config("Make the data directory's secret.key a regular file only its owner can read (chmod 600)."),
  workspace_invalid: config("Point the workspace at a folder troupe may write."),
  data_dir_invalid: config("Point TROUPE_DATA_DIR (--data-dir) at a folder."),
  data_dir_unwritable: config("Make the data directory writable, or choose another."),
  database_damaged: config("Restore the database from a copy, or move it away to start a new one."),
  database_empty: config("Point troupe at its own database, or at a new file."),
  database_too_new: config("Upgrade troupe: a newer version migrated this database."),
  database_missing: notFound("Check --data-dir or TROUPE_DATA_DIR: there is no troupe database there yet."),
  database_unreachable: config("Check TROUPE_DATABASE_URL and that Postgres is up."),
  database_url_invalid: config("Write the URL as postgres://user:password@host:5432/database."),
  workers_need_postgres: config("Set TROUPE_DATABASE_URL to run an API process with --workers 0, or give it workers."),
  database_url_required: config("Set TROUPE_DATABASE_URL (or --database-url): workers share a Postgres database."),
  database_unavailable: system("Retry shortly; check that the database is up.", 503),
  migration_failed: system("Read the migration's error, fix the database, and run troupe migrate again."),
  migration_invalid: system("A migration file in the installed troupe is misnamed: reinstall troupe (migrations are NNNN-what.sql)."),
  thread_lease_lost: system("Resume the run: the database session holding its thread ended."),
  webhook_secret_missing: input("Set the environment variable webhooks.secretEnv names."),
  webhook_refused: input("Use a webhook URL troupe may call (https, or an allowed host)."),

  // Eval
  suite_unreadable: input("Point the eval at a readable suite file."),
  suite_invalid: input("Fix the suite's case the message names."),
  suite_empty: input("Add cases to the suite."),
  suite_too_large: input("Split the suite into smaller ones."),
  cassette_unreadable: input("Point --replay at a folder of readable cassettes."),
  cassette_invalid: input("Record the cassette again: it is not valid JSON."),
  compare_unreadable: input("Point --compare at a results file of troupe eval."),
  compare_invalid: input("Point --compare at a results file of troupe eval."),
  record_and_replay: input("Use --record or --replay, not both."),
  record_invalid: input("Point --record at a folder."),
  replay_missing: input("Point --replay at a folder of cassettes."),
  out_invalid: input("Point --out at a file, not a folder."),

  // Memory
  empty_query: input("Search memory with some text."),
  query_too_long: input("Search memory with a shorter query."),
  invalid_key: input("Use an item key of 1-200 characters."),
  invalid_memory: input("Fix the memory field the message names."),
  invalid_memory_id: input("Use a memory id as troupe memory list shows it."),
  memory_expired: input("Save the fact with a later expiry."),
  memory_item_too_large: input("Save a smaller item."),
  memory_full: conflict("Forget some items first, or raise the memory limit."),
  memory_not_found: notFound("Check the memory id (troupe memory list)."),
  memory_store_missing: system("Run troupe migrate on this database: its memory tables are missing."),
  memory_store_corrupt: system("Restore troupe.db from a copy, or move it away to start a new one."),
  memory_store_closed: system("Retry once the store is open again."),

  // Models
  model_call_failed: model("Check the provider's status, key and model name; retry later."),
  model_refused: model("Rephrase the task, or use another model."),
  context_overflow: model("Send less (a shorter task, fewer results), or use a model with a larger context window."),
  invalid_structured_output: model("Retry, or use a model that follows structured output better."),
  answer_cut_off: model("Raise the model's output limit, or ask for a shorter answer."),
  planner_failed: model("Retry, or use a model that plans better: the planner's plan failed the plan checks."),

  // Tool calls: what a tool call can fail with (the model and the trace see these)
  tool_failed: tool("Read the tool's message; it failed in a way it did not classify."),
  tool_not_allowed: denied("Allow the tool for the run (--tools), or do without it."),
  permission_denied: denied("Grant the agent the tool's permission (troupe grants add, docs/trust.md)."),
  grant_expired: denied("Grant the permission again: the grant has expired."),
  grant_revoked: denied("Grant the permission again: the grant was revoked."),
  condition_failed: denied("Make the call fit the grant's conditions, or widen the grant."),
  no_agent: denied("Name the agent that makes the call (--agent)."),
  approval_required: denied("Call it where a person can approve it (a run), or grant it without approval."),
  steered_call_denied: denied("Review the untrusted input that steered the call (docs/trust.md); a person may approve it instead."),
  egress_denied: denied("Name the destination in the task or in trust.egress (docs/trust.md); a person may approve it instead."),
  rejected: tool("A person rejected the call: follow their feedback."),
  plan_dropped: tool("Nothing to do: the plan the call belonged to failed its checks."),
  outcome_unknown: tool("Check the workspace: the call ran before a crash and its result was not kept."),
  unknown_handle: tool("Use a value handle shown in the conversation."),
  invalid_result: tool("The tool returned a value that does not fit its schema; report it to the tool's author."),
  result_too_large: tool("Ask for less (a smaller range, a limit) or write the result to a file."),
  timeout: tool("Ask for less work per call, or raise the tool's timeout.", 504),
  cancelled: tool("Nothing to do: the run was cancelled."),
  invalid_path: input("Use a relative path inside the workspace."),
  path_outside_workspace: tool("Use a path inside the workspace."),
  not_found: tool("Check the path (file_list shows the workspace)."),
  file_not_found: notFound("Give the path of a file in the workspace (relative to it), as the file tools take it."),
  exists: tool("Pass overwrite: true, or choose another path."),
  not_empty: tool("Pass recursive: true to delete the folder with its contents."),
  not_a_regular_file: tool("Read a regular file, not a device, FIFO or socket."),
  not_text: tool("Read the file with encoding base64."),
  too_large: tool("Read a range of the file, or a smaller file."),
  access_denied: tool("Make the file readable and writable by troupe."),
  disk_full: tool("Free disk space."),
  read_only: tool("Use a workspace on a writable file system."),
  quota_exceeded: tool("Remove files, or raise tools.quota in the config file."),
  label_not_kept: tool("Retry when the store answers: troupe keeps a file's label before it writes the file (docs/trust.md)."),
  invalid_patch: tool("Send the edit as a unified diff."),
  patch_does_not_apply: tool("Read the file again and propose the change against its current text."),
  invalid_expression: tool("Fix the expression at the position the message names."),
  unknown_variable: tool("Bind every name the expression uses as an argument of the step (a value or a reference), or fix the name."),
  variable_not_numeric: tool("Point the variable's reference at a number (e.g. path $.price), or a list of numbers."),
  too_many_variables: tool("Bind at most 32 variables; take a list by one reference and sum(…) it instead."),
  variable_too_large: tool("Keep a list variable to at most 10,000 numbers."),
  invalid_schema: input("Send the schema as valid JSON."),
  path_too_costly: input("Use a simpler JSONPath: fewer wildcards and recursive descents."),
  too_deep: tool("Use a JSON document or schema with less nesting."),
  json_failed: tool("Retry the call; report it if it fails again."),
  code_error: tool("Fix the script: it threw or exited with a non-zero code."),
  memory_limit: tool("Use less memory in the script, or raise tools.sandbox.memoryMb."),
  stack_limit: tool("Recurse less deeply in the script."),
  crashed: tool("Retry; report it if the sandbox crashes again."),
  sandbox_unavailable: tool("Install the interpreter (bubblewrap and python3 or node), or set its path in the config."),
  stage_too_large: tool("Shrink the workspace, or raise tools.sandbox.maxStageBytes."),
  undeclared_writes: tool("Declare the paths the script writes in its subtask's writes."),
  invalid_url: tool("Fetch an http or https URL."),
  host_denied: tool("Fetch a host not on the deny list, or change tools.network."),
  blocked_address: tool("Fetch a public address, or allow the address in tools.network.allowAddresses."),
  fetch_failed: tool("Check the URL and the network; retry later."),
  http_error: tool("Check the URL; the server answered with an error status."),
  too_many_redirects: tool("Fetch the final URL directly."),
  search_failed: tool("Retry later: the search provider could not be reached."),
  provider_not_configured: tool("Configure the search provider's key or URL, or use another."),
  mcp_failed: tool("Check the MCP server; the call did not complete."),
  input_required: tool("Answer the tool server's question (troupe resume); the call is made again with the answer."),
  mcp_tool_error: tool("Read the MCP tool's message and call it again with other arguments."),
  remote_error: tool("Read the remote agent's message; retry later."),
  remote_failed: tool("Read the remote agent's message; the task failed there."),
  remote_rejected: tool("Send the remote agent a task it accepts."),
  remote_cancelled: tool("Send the task again: the remote agent cancelled it."),
  remote_auth_required: tool("Give the remote agent's credentials in its config."),
  remote_invalid: tool("Report it to the remote agent's owner: it answered in an unexpected state."),
  remote_redirect: tool("Point the config at the remote agent's final URL."),
  remote_too_large: tool("Ask the remote agent for a smaller answer."),
  remote_unreachable: tool("Check the remote agent's URL and that it is up."),
  board_full: tool("Nothing more can be posted in this run."),
  board_limit: tool("Post fewer messages per subtask."),
  unknown_recipient: tool("Post to a subtask of the plan or an agent."),
  no_board: tool("Use the board only inside a run's subtask."),
  no_store: tool("Run the tool through troupe run, troupe serve or an engine."),
  no_thread: tool("Use thread_result only inside a conversation."),
  not_in_thread: tool("Use handles from this conversation's Conversation section."),
} as const satisfies Record<string, ErrorEntry>;

/** A code of the catalogue. */
export type CatalogueCode = keyof typeof ERROR_CODES;

/** The codes of one kind. */
export type CodeOfKind<Kind extends ErrorKind> = { [Code in CatalogueCode]: (typeof ERROR_CODES)[Code]["kind"] extends Kind ? Code : never }[CatalogueCode];

/** The problems a request field can have, each a code `<field>_<problem>` (`task_required`, `limit_out_of_range`). */
export const FIELD_PROBLEMS = ["required", "invalid", "empty", "too_short", "too_long", "too_few", "too_many", "out_of_range"] as const;
export type FieldProblem = (typeof FIELD_PROBLEMS)[number];

declare const fieldCodeBrand: unique symbol;
/** A request field's problem as a code; made only by {@link fieldErrorCode}, so a typo cannot pass as one. */
export type FieldErrorCode = `${string}_${FieldProblem}` & { readonly [fieldCodeBrand]: true };

/** Every code an error may carry. */
export type ErrorCode = CatalogueCode | FieldErrorCode;

/** The entry every `<field>_<problem>` code shares. */
export const FIELD_ERROR: ErrorEntry<"input"> = input("Fix the request field the code names (data.issues lists every problem).");

export function fieldErrorCode(field: string, problem: FieldProblem): FieldErrorCode {
  return `${field}_${problem}` as FieldErrorCode;
}

export function isCatalogueCode(value: unknown): value is CatalogueCode {
  return typeof value === "string" && Object.hasOwn(ERROR_CODES, value);
}

/** Whether `value` is a code of the catalogue of the kind given (a code a schema names in a custom issue, say). */
export function isCodeOfKind<Kind extends ErrorKind>(value: unknown, kind: Kind): value is CodeOfKind<Kind> {
  return isCatalogueCode(value) && ERROR_CODES[value].kind === kind;
}

const FIELD_CODE = new RegExp(`^[A-Za-z0-9_]+_(?:${FIELD_PROBLEMS.join("|")})$`);

/**
 * A code's entry; a field code has the field entry. A code the types would refuse (from a caller
 * that skips them) is a fault of that caller: it reads as `internal_error`.
 */
export function errorEntry(code: ErrorCode): ErrorEntry {
  if (isCatalogueCode(code)) return ERROR_CODES[code];
  return FIELD_CODE.test(code) ? FIELD_ERROR : ERROR_CODES.internal_error;
}
