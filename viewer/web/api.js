import { useEffect, useState } from "preact/hooks";

/** GET a viewer API path; rejects with the server's error message. */
export async function api(path) {
  const res = await fetch(path, { headers: { accept: "application/json" } });
  const body = await res.json().catch(() => ({ error: `${res.status} ${res.statusText}` }));
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${res.statusText}`);
  return body;
}

/** { data, error } for one API path; refetches when the path changes. */
export function useApi(path) {
  const [state, setState] = useState({ data: null, error: null, path: null });
  useEffect(() => {
    let live = true;
    setState({ data: null, error: null, path });
    api(path).then(
      (data) => live && setState({ data, error: null, path }),
      (err) => live && setState({ data: null, error: err.message, path }),
    );
    return () => {
      live = false;
    };
  }, [path]);
  return state.path === path ? state : { data: null, error: null };
}

export const enc = encodeURIComponent;
export const sessionPath = (task, session) => `api/tasks/${enc(task)}/sessions/${enc(session)}`;
export const imagePath = (hash) => `api/images/${enc(hash)}`;
