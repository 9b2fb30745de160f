// createBackup, restoreBackup, deleteBackup: a backup is a snapshot of the directory asked for
// (snapshots/ctl's `take NAME DIR`: it weighs what the directory does, taken at one instant
// even while commands run); the object names it and the directory, and restoring it restores
// that directory in place.
import { randomBytes } from 'node:crypto';
import { rmdir } from './io.js';
import { join } from 'node:path';
import { ValidationError, mapError } from './errors.js';
import { workspaceParts } from './files.js';
import { writeControl } from './fsio.js';
import { checkName } from './names.js';

/* The snapshot's directory of a backup object, its id checked first. */
function snapshotDir(sandbox, backup) {
	if (!backup || typeof backup !== 'object') throw new ValidationError('a backup object {id, dir} is required');
	return join(sandbox.mountpoint, 'snapshots', checkName(backup.id, 'backup'));
}

/* dir: the workspace or a directory in it, as commands see it (relative: from the session's
 * cwd); name: a label kept in the returned object. */
export async function createBackup(session, { dir, name } = {}) {
	const parts = await workspaceParts(session, dir);
	const id = `backup-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
	try {
		await writeControl(join(session.sandbox.mountpoint, 'snapshots', 'ctl'), `take ${id} ${parts.join('/')}\n`);
	} catch (err) {
		throw mapError(err, 'backup', `backup of ${dir}`);
	}
	const backup = { id, dir: ['/workspace', ...parts].join('/') };
	if (name !== undefined) backup.name = String(name);
	return backup;
}

/* force: end what runs in the sandbox first (else ResourceBusyError while something runs). */
export async function restoreBackup(session, backup, { force = false } = {}) {
	const path = snapshotDir(session.sandbox, backup);
	const parts = await workspaceParts(session, backup.dir ?? '/workspace');
	const line = ['restore', ...(force ? ['force'] : []), ...(parts.length ? [parts.join('/')] : [])].join(' ');
	try {
		await writeControl(join(path, 'ctl'), `${line}\n`);
	} catch (err) {
		throw mapError(err, 'backup', `restore of backup ${backup.id}`);
	}
	return { success: true, id: backup.id, dir: backup.dir ?? '/workspace' };
}

export async function deleteBackup(session, backup) {
	const path = snapshotDir(session.sandbox, backup);
	try {
		await rmdir(path);
	} catch (err) {
		throw mapError(err, 'backup', `backup ${backup.id}`);
	}
	return { success: true, id: backup.id };
}
