import type { ActTarget } from '../../shared/act-target.ts';
import type { UploadFile } from '../../shared/protocol.ts';
import type { BrowserAction } from '../../shared/tool-arguments.ts';
import type { ToolCommand } from '../../shared/tools.ts';
import { attachedFile, targetFileOf, uploadFileOf } from '../artifacts/run-files.ts';
import type { RunRow } from '../db/schema.ts';
import { HostCallError } from '../host/host-session.ts';
import type { Ports } from '../ports.ts';

/**
 * An upload act's target with the attached file it sets (issue 33): the file `action.file_id`
 * names among THIS run's attached files, with its name, size in bytes and type, so the approval
 * names them (shared/act-target.ts `describeAct`). Any other act's target is returned as it is.
 * @returns `{target}`, or `{refused}` with the reason when the run has no such file (another
 *   run's file, a removed one, or an id never issued): the caller rejects the call as
 *   `invalid_arguments` and dispatches nothing.
 */
export async function withUploadFile(
  ports: Ports,
  run: RunRow,
  action: BrowserAction,
  target: ActTarget,
): Promise<{ target: ActTarget; refused?: undefined } | { refused: string }> {
  if (action.action !== 'upload') return { target };
  const file = await attachedFile(ports, run.id, action.file_id);
  if (file === undefined) {
    return {
      refused: `file_id: ${action.file_id} is not a file attached to this run; the owner attaches files (POST /v1/runs/${run.id}/files) and an upload names one of them`,
    };
  }
  return { target: { ...target, file: targetFileOf(file) } };
}

/**
 * The attached file an upload command sets, read from the store right before it is sent (the
 * host receives the bytes, never a path); undefined for any other command.
 * @throws HostCallError('invalid_arguments') when the run no longer has the file (the owner
 *   removed it after the approval, or retention did): nothing is sent.
 */
export async function uploadFileFor(ports: Ports, run: RunRow, command: ToolCommand): Promise<UploadFile | undefined> {
  if (command.method !== 'page.act' || command.params.action.action !== 'upload') return undefined;
  const fileId = command.params.action.file_id;
  const file = await uploadFileOf(ports, run.id, fileId);
  if (file === undefined) throw new HostCallError('invalid_arguments', `the attached file ${fileId} was removed from the run; nothing was sent`);
  return file;
}
