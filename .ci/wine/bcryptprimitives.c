/* Rust's standard library asks bcryptprimitives.dll for ProcessPrng (Windows 10 and later),
   which Wine 8.0 does not ship: this DLL answers it from RtlGenRandom, for .ci/windows-wine. */
#include <windows.h>
#include <ntsecapi.h>
__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    return RtlGenRandom(data, (ULONG)len);
}
