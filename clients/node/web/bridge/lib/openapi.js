// GET /v1/openapi.json: the routes sbxfs-bridge serves, with the paths, methods, parameters,
// bodies and answers of the Sandbox Bridge's document (@cloudflare/sandbox 0.12.x) in our own
// words, and our additions: the tree routes (/v1/sandbox/{id}/fs/{path}), the errno codes, and
// `x-sbxfs-unsupported` on the routes sbxfs answers with 501 (buckets, the warm pool).
// tests/integration/test_bridge.py compares it with the package's document route by route.

const ref = (name) => ({ $ref: `#/components/schemas/${name}` });
const jsonOf = (schema) => ({ 'application/json': { schema } });
const err = (description) => ({ description, content: jsonOf(ref('ErrorResponse')) });
const AUTH = { '401': err('No token, or one that is not valid for this sandbox.') };
const ID = { name: 'id', in: 'path', required: true, schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' }, description: 'The sandbox id; a sandbox is made on its first use.' };
const SESSION = { name: 'Session-Id', in: 'header', required: false, schema: { type: 'string', pattern: '^[a-zA-Z0-9._-]{1,128}$' }, description: 'The session of sessions/ the call runs in (sbxfs takes ids of 64 characters at most).' };
const PORT = { name: 'port', in: 'path', required: true, schema: { type: 'integer', minimum: 1, maximum: 65535 } };
const PATH = { name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'The file, beneath /workspace (a relative path is taken from there).' };
const TREE = { name: 'path', in: 'path', required: true, schema: { type: 'string' }, description: 'A path of the sandbox\'s mount: sessions/default/stdout, workspace/x, network/policy, ...' };
const curl = (line) => [{ lang: 'curl', source: line }];
const H = '-H "Authorization: Bearer $TOKEN"';
const BASE = 'http://127.0.0.1:8024';
const UNSUPPORTED = { 'x-sbxfs-unsupported': true };
const notHere = (summary, tag) => ({
	summary, ...UNSUPPORTED, tags: [tag],
	description: 'Not part of sbxfs: answered 501 with the reason.',
	responses: { '501': err('Not part of sbxfs.'), ...AUTH },
});
const bytes = { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } };

export const OPENAPI = {
	openapi: '3.1.0',
	info: {
		title: 'sbxfs-bridge',
		version: '1.0.0',
		description: 'The Sandbox Bridge\'s HTTP API over a fleet of sbxfs sandboxes (sbxfs-fleet), every call file operations on the fleet\'s mount, plus the whole tree of each sandbox (docs/api.md).',
	},
	components: {
		securitySchemes: { BearerAuth: { type: 'http', scheme: 'bearer', description: 'A token of the --tokens file: for the fleet (*) or one sandbox. /v1/openapi.json also takes ?token=.' } },
		schemas: {
			ErrorResponse: {
				type: 'object', required: ['error', 'code'],
				properties: { error: { type: 'string' }, code: { type: 'string', description: 'The Bridge\'s codes, and for an errno of the mount one of not_found, exists, not_empty, busy, is_directory, forbidden, too_large, unavailable, capacity_exceeded, io_error, timeout, not_supported, internal_error (docs/api.md).' } },
			},
			ExecRequest: {
				type: 'object', required: ['argv'],
				properties: { argv: { type: 'array', items: { type: 'string' }, minItems: 1 }, timeout_ms: { type: 'integer', minimum: 0 }, cwd: { type: 'string' } },
			},
			OkResponse: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean', enum: [true] } } },
			WriteResponse: { type: 'object', required: ['ok'], properties: { ok: { type: 'boolean', enum: [true] } } },
			RunningResponse: { type: 'object', required: ['running'], properties: { running: { type: 'boolean' } } },
			TunnelRequest: { type: 'object', properties: { name: { type: 'string' } } },
			Tunnel: {
				type: 'object', required: ['id', 'port', 'url', 'hostname', 'createdAt'],
				properties: { id: { type: 'string' }, port: { type: 'integer' }, url: { type: 'string', format: 'uri' }, hostname: { type: 'string' }, createdAt: { type: 'string', format: 'date-time' }, name: { type: 'string' } },
			},
			TreeEntry: { type: 'object', properties: { name: { type: 'string' }, nameBase64: { type: 'string', description: 'A name that is not UTF-8.' }, type: { type: 'string', enum: ['file', 'directory', 'symlink', 'other'] } } },
		},
	},
	security: [{ BearerAuth: [] }],
	paths: {
		'/v1/sandbox': { post: {
			summary: 'A new sandbox', tags: ['sandbox'],
			description: 'Reads the fleet\'s clone: a new sandbox, up when this answers.',
			'x-codeSamples': curl(`curl -X POST ${BASE}/v1/sandbox ${H}`),
			responses: { '200': { description: 'Its id.', content: jsonOf({ type: 'object', required: ['id'], properties: { id: { type: 'string' } } }) }, '503': err('The fleet\'s bound (capacity_exceeded).'), ...AUTH },
		} },
		'/v1/sandbox/{id}/exec': { post: {
			summary: 'Runs a command', tags: ['sandbox'], parameters: [ID, SESSION],
			description: 'argv, shell-quoted, written to the session\'s cmd. Events: stdout and stderr (base64 data), then exit ({"exit_code": N}) or error ({error, code}: exec_error for a timeout or a signal).',
			requestBody: { required: true, content: jsonOf(ref('ExecRequest')) },
			'x-codeSamples': curl(`curl -N -X POST ${BASE}/v1/sandbox/my-sandbox/exec ${H} -H "Content-Type: application/json" -d '{"argv":["sh","-lc","echo hello"]}'`),
			responses: { '200': { description: 'The event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } }, '400': err('A bad body.'), '403': err('cwd outside /workspace.'), '502': err('The command could not be submitted.'), ...AUTH },
		} },
		'/v1/sandbox/{id}/tunnel/{port}': {
			post: {
				summary: 'Exposes a port', tags: ['ports'], parameters: [ID, PORT],
				description: 'ports/PORT of the sandbox: a URL on this host that reaches the port in the sandbox.',
				requestBody: { required: false, content: jsonOf(ref('TunnelRequest')) },
				'x-codeSamples': curl(`curl -X POST ${BASE}/v1/sandbox/my-sandbox/tunnel/8080 ${H}`),
				responses: { '200': { description: 'The exposed port.', content: jsonOf(ref('Tunnel')) }, '400': err('A bad port or name.'), '502': err('Not exposed (tunnel_error).'), ...AUTH },
			},
			delete: {
				summary: 'Closes an exposed port', tags: ['ports'], parameters: [ID, PORT],
				'x-codeSamples': curl(`curl -X DELETE ${BASE}/v1/sandbox/my-sandbox/tunnel/8080 ${H}`),
				responses: { '204': { description: 'Closed, or it was not exposed.' }, '400': err('A bad port.'), '502': err('tunnel_error.'), ...AUTH },
			},
		},
		'/v1/sandbox/{id}/file/{path}': {
			get: {
				summary: 'Reads a workspace file', tags: ['files'], parameters: [ID, PATH, SESSION],
				'x-codeSamples': curl(`curl ${BASE}/v1/sandbox/my-sandbox/file/workspace/main.py ${H} -o main.py`),
				responses: { '200': { description: 'Its bytes.', content: bytes }, '400': err('A bad path.'), '403': err('Outside /workspace, or a symbolic link.'), '404': err('No such file (workspace_read_not_found).'), '502': err('The read failed.'), ...AUTH },
			},
			put: {
				summary: 'Writes a workspace file', tags: ['files'], parameters: [ID, PATH, SESSION],
				description: 'Written beside it, then renamed over it: whole or not at all.',
				requestBody: { required: true, content: bytes },
				'x-codeSamples': curl(`curl -X PUT ${BASE}/v1/sandbox/my-sandbox/file/workspace/main.py ${H} -H "Content-Type: application/octet-stream" --data-binary @main.py`),
				responses: { '200': { description: 'Written.', content: jsonOf(ref('WriteResponse')) }, '400': err('A bad path.'), '403': err('Outside /workspace, or a symbolic link.'), '413': err('Past the body bound.'), '502': err('The write failed.'), ...AUTH },
			},
		},
		'/v1/sandbox/{id}/pty': { get: {
			summary: 'A terminal over a WebSocket', tags: ['terminals'],
			parameters: [ID, { name: 'cols', in: 'query', schema: { type: 'integer' } }, { name: 'rows', in: 'query', schema: { type: 'integer' } }, { name: 'shell', in: 'query', schema: { type: 'string' } }, { name: 'session', in: 'query', schema: { type: 'string' } }, SESSION],
			description: 'The session\'s terminal `pty` (terms/pty), made on first use and kept when the socket closes: a reconnect replays what its ring holds. Binary frames both ways; text frames: {"type":"resize","cols","rows"} in; {"type":"ready"}, {"type":"exit","code"}, {"type":"error","message"} out. shell: a program to run instead of the session\'s shell.',
			'x-codeSamples': [{ lang: 'JavaScript', source: 'const ws = new WebSocket("ws://127.0.0.1:8024/v1/sandbox/my-sandbox/pty?cols=120&rows=30", { headers: { Authorization: "Bearer " + TOKEN } });' }],
			responses: { '101': { description: 'Upgraded.' }, '400': err('No upgrade, or bad query parameters.'), '502': err('The terminal could not be opened.'), ...AUTH },
		} },
		'/v1/sandbox/{id}/running': { get: {
			summary: 'Whether it runs', tags: ['sandbox'], parameters: [ID],
			description: 'true when the fleet\'s status says running (false for one asleep, stopped, failed or unknown); it does not wake or make one.',
			'x-codeSamples': curl(`curl ${BASE}/v1/sandbox/my-sandbox/running ${H}`),
			responses: { '200': { description: 'Always answered.', content: jsonOf(ref('RunningResponse')) }, ...AUTH },
		} },
		'/v1/sandbox/{id}/persist': { post: {
			summary: 'The workspace as a tar archive', tags: ['files'],
			parameters: [ID, { name: 'excludes', in: 'query', schema: { type: 'string' }, description: 'Comma-separated paths under /workspace.' }],
			description: 'tar, run in the sandbox, spooled here first: a failure is a 502 with tar\'s words.',
			'x-codeSamples': curl(`curl -X POST ${BASE}/v1/sandbox/my-sandbox/persist ${H} -o workspace.tar`),
			responses: { '200': { description: 'The archive.', content: bytes }, '400': err('A bad exclude.'), '502': err('tar failed (workspace_archive_read_error).'), ...AUTH },
		} },
		'/v1/sandbox/{id}/hydrate': { post: {
			summary: 'Fills the workspace from a tar archive', tags: ['files'], parameters: [ID],
			description: 'The archive is written to a new file of the workspace and extracted there by tar in the sandbox.',
			requestBody: { required: true, content: bytes },
			'x-codeSamples': curl(`curl -X POST ${BASE}/v1/sandbox/my-sandbox/hydrate ${H} -H "Content-Type: application/octet-stream" --data-binary @workspace.tar`),
			responses: { '200': { description: 'Extracted.', content: jsonOf(ref('OkResponse')) }, '400': err('No archive, or one past 1 GiB.'), '502': err('tar failed (workspace_archive_write_error).'), ...AUTH },
		} },
		'/v1/sandbox/{id}/mount': { post: { ...notHere('Mounting a bucket', 'buckets'), parameters: [ID], requestBody: { required: true, content: jsonOf({ type: 'object' }) } } },
		'/v1/sandbox/{id}/unmount': { post: { ...notHere('Unmounting a bucket', 'buckets'), parameters: [ID], requestBody: { required: true, content: jsonOf({ type: 'object' }) } } },
		'/v1/sandbox/{id}': { delete: {
			summary: 'Destroys a sandbox', tags: ['sandbox'], parameters: [ID],
			description: 'rmdir of the fleet\'s ID: its processes, mounts, uid and files; 204 when it is gone, or was not there.',
			'x-codeSamples': curl(`curl -X DELETE ${BASE}/v1/sandbox/my-sandbox ${H}`),
			responses: { '204': { description: 'Gone.' }, ...AUTH },
		} },
		'/v1/sandbox/{id}/session': { post: {
			summary: 'A new session', tags: ['sessions'], parameters: [ID],
			requestBody: { required: false, content: jsonOf({ type: 'object', properties: { id: { type: 'string' }, cwd: { type: 'string' }, env: { type: 'object', additionalProperties: { type: 'string' } } } }) },
			'x-codeSamples': curl(`curl -X POST ${BASE}/v1/sandbox/my-sandbox/session ${H} -H "Content-Type: application/json" -d '{"id":"build"}'`),
			responses: { '200': { description: 'Its id, for Session-Id.', content: jsonOf({ type: 'object', required: ['id'], properties: { id: { type: 'string' } } }) }, '502': err('Not made (session_error), for example an id that is there.'), ...AUTH },
		} },
		'/v1/sandbox/{id}/session/{sid}': { delete: {
			summary: 'Removes a session', tags: ['sessions'], parameters: [ID, { name: 'sid', in: 'path', required: true, schema: { type: 'string' } }],
			'x-codeSamples': curl(`curl -X DELETE ${BASE}/v1/sandbox/my-sandbox/session/build ${H}`),
			responses: { '200': { description: 'Removed.', content: jsonOf({ type: 'object', required: ['success', 'sessionId'], properties: { success: { type: 'boolean' }, sessionId: { type: 'string' } } }) }, '502': err('Not removed (session_error): the default session, or none of that id.'), ...AUTH },
		} },
		'/health': { get: {
			summary: 'Liveness', tags: ['service'], security: [],
			'x-codeSamples': curl(`curl ${BASE}/health`),
			responses: { '200': { description: 'Up.', content: jsonOf(ref('OkResponse')) } },
		} },
		'/v1/openapi.json': { get: {
			summary: 'This document', tags: ['service'],
			'x-codeSamples': curl(`curl ${BASE}/v1/openapi.json ${H}`),
			responses: { '200': { description: 'The document.', content: jsonOf({ type: 'object' }) }, ...AUTH },
		} },
		'/v1/pool/stats': { get: notHere('The warm pool', 'pool') },
		'/v1/pool/shutdown-prewarmed': { post: notHere('The warm pool', 'pool') },
		'/v1/pool/prime': { post: notHere('The warm pool', 'pool') },
		'/v1/sandbox/{id}/fs/{path}': {
			get: {
				summary: 'Reads a file of the tree, or lists a directory', tags: ['tree'],
				parameters: [ID, TREE, { name: 'offset', in: 'query', schema: { type: 'integer', minimum: 0 }, description: 'Reads from this byte on.' },
					{ name: 'stat', in: 'query', schema: { type: 'boolean' }, description: 'lstat as JSON: type, size, mode, mtimeMs.' },
					{ name: 'nowait', in: 'query', schema: { type: 'boolean' }, description: 'What the file holds now, without waiting.' }],
				description: 'A file streams to its end as cat reads it (a running command\'s stdout until it ends); a directory is a JSON array of TreeEntry.',
				'x-codeSamples': curl(`curl -N ${BASE}/v1/sandbox/my-sandbox/fs/sessions/default/stdout ${H}`),
				responses: { '200': { description: 'The bytes, or the listing.', content: { ...bytes, ...jsonOf({ type: 'array', items: ref('TreeEntry') }) } }, '400': err('A bad path, or not a file or directory.'), '403': err('A symbolic link, or refused by the mount.'), '404': err('No such file.'), ...AUTH },
			},
			put: {
				summary: 'Writes a file of the tree', tags: ['tree'],
				parameters: [ID, TREE, { name: 'reply', in: 'query', schema: { type: 'boolean' }, description: 'A run handle: the line the file answers after the write, on the same open.' }],
				description: 'One open, the whole body, one close, as `echo ... > FILE`; a workspace file is replaced whole by a rename.',
				requestBody: { required: true, content: bytes },
				'x-codeSamples': curl(`curl -X PUT ${BASE}/v1/sandbox/my-sandbox/fs/sessions/default/cmd ${H} --data-binary 'echo hi'`),
				responses: { '200': { description: 'Written.', content: jsonOf(ref('OkResponse')) }, '400': err('Refused by the file (EINVAL).'), '403': err('Refused by the mount.'), '413': err('Past the body bound.'), ...AUTH },
			},
			post: {
				summary: 'Makes a directory, or renames', tags: ['tree'],
				parameters: [ID, TREE, { name: 'rename', in: 'query', schema: { type: 'string' }, description: 'rename(2) to this path of the tree instead.' }],
				description: 'mkdir: a session, a snapshot, an exposed port, a workspace directory.',
				'x-codeSamples': curl(`curl -X POST ${BASE}/v1/sandbox/my-sandbox/fs/sessions/build ${H}`),
				responses: { '201': { description: 'Made.', content: jsonOf(ref('OkResponse')) }, '409': err('It is there.'), ...AUTH },
			},
			delete: {
				summary: 'Removes a directory or a file', tags: ['tree'], parameters: [ID, TREE],
				'x-codeSamples': curl(`curl -X DELETE ${BASE}/v1/sandbox/my-sandbox/fs/sessions/build ${H}`),
				responses: { '200': { description: 'Removed.', content: jsonOf(ref('OkResponse')) }, '404': err('No such file.'), '409': err('Not empty, or busy.'), ...AUTH },
			},
		},
	},
};
