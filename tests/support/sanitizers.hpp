// Which sanitizer a test program is built with. gcc defines __SANITIZE_ADDRESS__ and
// __SANITIZE_THREAD__; clang (14) defines neither and answers __has_feature instead, so a test
// that asks only gcc's way runs its unsanitized bounds under clang's sanitizers.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define SONIC_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SONIC_TEST_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define SONIC_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SONIC_TEST_TSAN 1
#endif
#endif

#if defined(SONIC_TEST_ASAN) || defined(SONIC_TEST_TSAN)
#define SONIC_TEST_SANITIZED 1
#endif
