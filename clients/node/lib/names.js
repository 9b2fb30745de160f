// sbxfs's name rule for every id the client joins into a path of the mount (sessions,
// processes, terminals, code contexts): 1 to 64 of A-Z a-z 0-9 . _ -, and not `.` or `..`
// (session_id_valid in src/session.c). It is checked before the id touches any path, so that
// no id can name a file outside its directory (`../../etc`, `a/b`) whatever the caller passes.
import { ValidationError } from './errors.js';

const NAME = /^[A-Za-z0-9._-]{1,64}$/;

export function isName(id) {
	return typeof id === 'string' && NAME.test(id) && id !== '.' && id !== '..';
}

/* The id itself, or a ValidationError naming what it was for (`session`, `process`, ...). */
export function checkName(id, what) {
	if (!isName(id))
		throw new ValidationError(`invalid ${what} id ${JSON.stringify(id)}: 1 to 64 of A-Z a-z 0-9 . _ -, not . or ..`);
	return id;
}
